package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/outfile"
)

// PlanOptions are the options of `plan`.
type PlanOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	kernel kernelFlags
	output string
	// out is --out: the file the plan is saved to, for apply FILE.
	out   string
	flags *pflag.FlagSet
}

func newPlanCommand(c *common) *cobra.Command {
	o := &PlanOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts), kernel: kernelFlags{ipvs: true, lockFlags: true}}
	o.proxy.onNode = true
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would change in this node's kernel",
		Long: `Render the desired rules, read the live rules from this node's kernel, and
print the difference as a unified diff in the mode's native syntax. Only the
rules the tool owns are compared; everything else is left out.

Exit codes (as kubectl diff): 0 no changes, 1 changes, 2 error.`,
		Example: `  # What would apply change on this node? (on a node, as root)
  kubectl svcproxy plan --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  # The same for nftables mode, from a snapshot file, as JSON (on a node, as root)
  kubectl svcproxy plan --mode=nftables -f snapshot.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	cmd.Flags().StringVar(&o.out, "out", "", "also save the plan to this file, for apply FILE to execute exactly (see docs/SAVED-PLANS.md)")
	markNeedsLinux(cmd, "it reads this node's kernel rules")
	return cmd
}

// Complete reads the config file and parses the settings, with the node's
// sysctls.
func (o *PlanOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.flags = cmd.Flags()
	return completeRender(cmd, &o.input, o.proxy)
}

// Validate checks the flags.
func (o *PlanOptions) Validate() error {
	if err := validateOutput(o.output); err != nil {
		return err
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	if err := checkOutFile("--out", o.out); err != nil {
		return err
	}
	if err := o.proxy.validateRender(kernelModes...); err != nil {
		return err
	}
	return o.kernel.validate(o.proxy)
}

// Run renders, reads the kernel and prints the plan.
func (o *PlanOptions) Run(ctx context.Context) error {
	settings := &o.proxy.settings
	snap, err := o.load(ctx, &o.input, settings.cluster.NodeName)
	if err != nil {
		return err
	}
	d, err := o.renderSnapshot(settings, snap)
	if err != nil {
		return err
	}
	b, err := o.backend(ctx, &o.kernel, d.mode)
	if err != nil {
		return err
	}
	o.noteKubeProxy(ctx)
	o.noteOtherModes(&o.kernel, d.mode)
	st := o.reporter().Start(fmt.Sprintf("reading the kernel (%s) and diffing", b.name()))
	defer st.End()
	p, err := planKernel(ctx, b, d)
	if err != nil {
		return err
	}
	st.Done("read the kernel (%s) and diffed: %s", b.name(), p.summary())
	out, flush := o.colored(o.output, diffClass)
	if err := writePlan(out, o.output, d.mode, b, p); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if o.out != "" {
		if err := o.save(snap, b, p); err != nil {
			return err
		}
	}
	if !p.empty() {
		return ErrChanges
	}
	return nil
}

// save writes the plan to --out, for apply FILE.
func (o *PlanOptions) save(snap *cluster.Snapshot, b kernelBackend, p kernelPlan) error {
	saved, err := newSavedPlan(o.flags, snap, &o.proxy.settings, b, p)
	if err != nil {
		return err
	}
	if err := outfile.Write(o.out, saved.Encode); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// Machine output keeps stdout for the data.
	w := o.streams.Out
	if o.output != "text" {
		w = o.streams.ErrOut
	}
	fmt.Fprintf(w, "Saved the plan to %s; to make exactly these changes, run: kubectl svcproxy apply %s\n", o.out, o.out)
	return nil
}

// planReport is the data form of a plan: kind Plan (docs/OUTPUT.md).
type planReport struct {
	typeMeta
	Mode    Mode         `json:"mode"`
	Backend string       `json:"backend"`
	Summary diff.Summary `json:"summary"`
	Sets    any          `json:"changeSets"`
	// Sysctls are the sysctls the plan changes.
	Sysctls diff.SysctlChanges `json:"sysctls"`
}

func writePlan(w io.Writer, format string, mode Mode, b kernelBackend, p kernelPlan) error {
	sysctls := p.sysctls()
	if sysctls == nil {
		sysctls = diff.SysctlChanges{}
	}
	report := planReport{typeMeta: newTypeMeta(kindPlan), Mode: mode, Backend: b.name(), Summary: p.summary(), Sets: p.data(), Sysctls: sysctls}
	if format != "text" {
		return writeData(w, format, &report)
	}
	if err := p.writeText(w); err != nil {
		return err
	}
	if p.empty() {
		_, err := fmt.Fprintf(w, "No changes: the node's %s rules match the cluster.\n", report.Backend)
		return err
	}
	_, err := fmt.Fprintf(w, "Plan: %s\n", report.Summary)
	return err
}
