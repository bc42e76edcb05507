package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// ResetOptions are the options of `reset`.
type ResetOptions struct {
	*common
	kernel kernelFlags
	dryRun bool
}

func newResetCommand(c *common) *cobra.Command {
	o := &ResetOptions{common: c}
	cmd := &cobra.Command{
		Use:     "reset",
		Aliases: []string{"cleanup"},
		Short:   "Remove every rule the tool owns for a mode",
		Long: `Remove the chains and jump rules the tool owns in the mode's tables, as
kube-proxy --cleanup does; used when switching modes. Foreign rules stay as
they were. kubelet's KUBE-FIREWALL chain, which kube-proxy shares, stays too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd) },
	}
	o.kernel.addFlags(cmd.Flags(), true)
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the exact iptables-restore input instead of running it")
	return cmd
}

// Run removes the owned rules of every selected family.
func (o *ResetOptions) Run(cmd *cobra.Command) error {
	mode, err := o.proxy.mode()
	if err != nil {
		return err
	}
	if mode != ModeIPTables {
		return fmt.Errorf("--mode %s: not implemented yet; use --mode=iptables", mode)
	}
	families, err := o.proxy.families()
	if err != nil {
		return err
	}
	client, err := o.kernel.iptablesClient(cmd.Context())
	if err != nil {
		return err
	}
	if !o.dryRun {
		l, err := o.kernel.lock()
		if err != nil {
			return err
		}
		defer l.Release()
	}
	var empty []*ipt.Ruleset
	for _, f := range families {
		empty = append(empty, diff.EmptyIPTables(f))
	}
	plans, err := client.Plan(cmd.Context(), empty)
	if err != nil {
		return err
	}
	if o.dryRun {
		printSteps(o.common, client, plans)
		return nil
	}
	if err := client.Apply(cmd.Context(), plans); err != nil {
		return err
	}
	var total diff.Summary
	for _, p := range plans {
		total.Add(p.Changes.Summary())
	}
	fmt.Fprintf(o.streams.Out, "Reset (iptables-%s): %s\n", client.Backend, total)
	return nil
}

func printSteps(c *common, client *applyipt.Client, plans []*applyipt.Plan) {
	steps := client.Steps(plans)
	if len(steps) == 0 {
		fmt.Fprintf(c.streams.Out, "# nothing to change (iptables-%s)\n", client.Backend)
	}
	for _, s := range steps {
		fmt.Fprintf(c.streams.Out, "# %s-%s-restore --noflush (%s)\n%s", binFor(s.Family), client.Backend, s.Family, s.Script)
	}
}

func binFor(f cluster.Family) string {
	if f == cluster.IPv6 {
		return "ip6tables"
	}
	return "iptables"
}
