package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// ResetOptions are the options of `reset`.
type ResetOptions struct {
	*common
	proxy  *ProxyFlags
	kernel kernelFlags
	dryRun bool
}

func newResetCommand(c *common) *cobra.Command {
	o := &ResetOptions{common: c, proxy: NewProxyFlags(modePart), kernel: kernelFlags{locking: true, ipvs: true}}
	cmd := &cobra.Command{
		Use:     "reset",
		Aliases: []string{"cleanup"},
		Short:   "Remove every rule the tool owns for a mode",
		Long: `Remove what the tool owns in the selected mode, as kube-proxy --cleanup does;
used when switching modes. iptables and userspace: the mode's chains and the
jump rules into them. nftables: the kube-proxy tables. ipvs: the virtual
servers, ipsets, the kube-ipvs0 interface and the helper chains. In every
mode it also removes the table inet kubectl-svcproxy-trace that a killed
trace --kernel left (only one that carries the tool's comment, and only
under the run lock, which a running trace holds). Foreign rules stay as
they were; so does kubelet's KUBE-FIREWALL chain, which kube-proxy shares.`,
		Example: `  # Remove what the tool wrote in nftables mode (on a node, as root)
  kubectl svcproxy reset --mode=nftables
  # Print what would be removed, without removing it (on a node, as root)
  kubectl svcproxy reset --mode=iptables --dry-run`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.proxy.AddFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print exactly what would be sent to the kernel instead of sending it")
	// The other kernel commands take it; reset removes what the tool owns
	// whatever the node is called.
	var nodeName string
	cmd.Flags().StringVar(&nodeName, "node-name", "", "accepted so that one set of flags serves every command; reset removes what the tool owns whatever the node")
	markNoEffect(cmd.Flags(), "node-name", "it removes what the tool owns whatever the node")
	markNeedsLinux(cmd, "it removes this node's kernel rules")
	return cmd
}

// Complete reads the config file and parses the mode and families.
func (o *ResetOptions) Complete(cmd *cobra.Command, _ []string) error {
	if err := o.proxy.Complete(cmd); err != nil {
		return err
	}
	return o.proxy.completeMode()
}

// Validate checks the flags.
func (o *ResetOptions) Validate() error {
	if err := o.proxy.validateModeFlags(); err != nil {
		return err
	}
	return o.kernel.validate(o.proxy)
}

// Run removes the owned rules of every selected family.
// A SIGTERM or SIGINT stops it before it writes, or after the reset it
// has started (see withInterrupt).
func (o *ResetOptions) Run(ctx context.Context) error {
	ctx, stop := withInterrupt(ctx)
	defer stop()
	families := o.proxy.settings.families
	b, err := o.backend(ctx, &o.kernel, o.proxy.settings.mode)
	if err != nil {
		return notWritten(ctx, err)
	}
	var traces traceLeftovers
	p, err := o.sync(ctx, &o.kernel, b, func() (kernelPlan, error) { return b.planReset(ctx, families) }, o.dryRun, traces.remove)
	if err != nil {
		return err
	}
	if o.dryRun {
		return traces.dryRun(o.streams.Out)
	}
	o.kernel.forgetApplied(o.proxy.settings.mode)
	fmt.Fprintf(o.streams.Out, "Reset (%s): %s\n", b.name(), p.summary())
	if err := traces.report(o.streams.Out); err != nil {
		return err
	}
	o.noteFinished(ctx, "reset")
	return nil
}
