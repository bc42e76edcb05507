package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/conntrack"
)

// ApplyOptions are the options of `apply`.
type ApplyOptions struct {
	*common
	source sourceFlags
	kernel kernelFlags
	dryRun bool
}

func newApplyCommand(c *common) *cobra.Command {
	o := &ApplyOptions{common: c}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Change this node's kernel rules to match the cluster, changing only what differs",
		Long: `Render the desired rules, read the live rules, and write only the chains that
differ. In iptables and userspace mode that is one atomic iptables-restore
--noflush per table; if a later table fails, the tables already written are
restored. In nftables mode it is one netlink transaction per table. Either
way the kernel is fully applied or as it was. Rules the tool does not own are never touched. Stale UDP
conntrack entries of changed Services are deleted afterwards.

Exit codes: 0 applied (or nothing to do), 2 error.`,
		Example: `  kubectl svcproxy apply --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  kubectl svcproxy apply -f snapshot.yaml --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd) },
	}
	o.source.addFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags(), true)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print exactly what would be sent to the kernel (restore input, nft script, ipvs commands) instead of sending it")
	return cmd
}

// Run renders, locks, plans and applies.
func (o *ApplyOptions) Run(cmd *cobra.Command) error {
	d, err := o.renderDesired(cmd, &o.source, kernelModes...)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	b, err := o.backend(ctx, &o.kernel, d.mode)
	if err != nil {
		return err
	}
	var beforeApply func() error
	if d.mode != ModeUserspace {
		beforeApply = func() error { return ensureRouteLocalnet(d) }
	}
	p, err := o.sync(ctx, &o.kernel, b, func() (kernelPlan, error) { return b.plan(ctx, d) }, o.dryRun, beforeApply)
	if err != nil || o.dryRun {
		return err
	}
	if d.mode != ModeUserspace {
		o.cleanConntrack(d, p)
	}
	fmt.Fprintf(o.streams.Out, "Applied (%s): %s\n", b.name(), p.summary())
	return nil
}

// cleanConntrack deletes the stale UDP conntrack entries of the families the
// plan changed, as kube-proxy does after each sync. A failure is a warning:
// the rules are already in place.
func (o *ApplyOptions) cleanConntrack(d *desired, p kernelPlan) {
	for _, f := range d.families {
		if !p.changed(f) {
			continue
		}
		if n, err := conntrack.CleanStaleUDP(d.tables.ForFamily(f)); err != nil {
			o.warnf("%v", err)
		} else if n > 0 {
			fmt.Fprintf(o.streams.ErrOut, "deleted %d stale UDP conntrack entries (%s)\n", n, f)
		}
	}
}
