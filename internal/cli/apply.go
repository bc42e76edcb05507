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
differ: one atomic iptables-restore --noflush per table. If a later table
fails, the tables already written are restored, so the kernel is either fully
applied or as it was. Rules the tool does not own are never touched. Stale UDP
conntrack entries of changed Services are deleted afterwards.

Exit codes: 0 applied (or nothing to do), 2 error.`,
		Example: `  kubectl svcproxy apply --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  kubectl svcproxy apply -f snapshot.yaml --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd) },
	}
	o.source.addFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags(), true)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the exact iptables-restore input instead of running it")
	return cmd
}

// Run renders, locks, plans and applies.
func (o *ApplyOptions) Run(cmd *cobra.Command) error {
	d, err := o.renderDesired(cmd, &o.source, ModeIPTables)
	if err != nil {
		return err
	}
	client, plans, err := o.syncKernel(cmd.Context(), &o.kernel, d.iptables, o.dryRun, func() error { return ensureRouteLocalnet(d) })
	if err != nil || o.dryRun {
		return err
	}
	for i, p := range plans {
		if p.Changes.Empty() {
			continue
		}
		if n, err := conntrack.CleanStaleUDP(d.tables.ForFamily(d.families[i])); err != nil {
			o.warnf("%v", err)
		} else if n > 0 {
			fmt.Fprintf(o.streams.ErrOut, "deleted %d stale UDP conntrack entries (%s)\n", n, d.families[i])
		}
	}
	fmt.Fprintf(o.streams.Out, "Applied (iptables-%s): %s\n", client.Backend, summarize(plans))
	return nil
}
