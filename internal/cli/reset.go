package cli

import (
	"fmt"

	"github.com/spf13/cobra"

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
	var empty []*ipt.Ruleset
	for _, f := range families {
		empty = append(empty, diff.EmptyIPTables(f))
	}
	client, plans, err := o.syncKernel(cmd.Context(), &o.kernel, empty, o.dryRun, nil)
	if err != nil || o.dryRun {
		return err
	}
	fmt.Fprintf(o.streams.Out, "Reset (iptables-%s): %s\n", client.Backend, summarize(plans))
	return nil
}
