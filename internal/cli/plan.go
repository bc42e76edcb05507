package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
)

// PlanOptions are the options of `plan`.
type PlanOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	kernel kernelFlags
	output string
}

func newPlanCommand(c *common) *cobra.Command {
	o := &PlanOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts), kernel: kernelFlags{ipvs: true}}
	o.proxy.onNode = true
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would change in this node's kernel",
		Long: `Render the desired rules, read the live rules from this node's kernel, and
print the difference as a unified diff in the mode's native syntax. Only the
rules the tool owns are compared; everything else is left out.

Exit codes (as kubectl diff): 0 no changes, 1 changes, 2 error.`,
		Example: `  kubectl svcproxy plan --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  kubectl svcproxy plan --mode=nftables -f snapshot.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

// Complete reads the config file and parses the settings, with the node's
// sysctls.
func (o *PlanOptions) Complete(cmd *cobra.Command, _ []string) error {
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
	if err := o.proxy.validateRender(kernelModes...); err != nil {
		return err
	}
	return o.kernel.validate(o.proxy.settings.mode)
}

// Run renders, reads the kernel and prints the plan.
func (o *PlanOptions) Run(ctx context.Context) error {
	d, err := o.renderDesired(ctx, &o.input, &o.proxy.settings)
	if err != nil {
		return err
	}
	b, err := o.backend(ctx, &o.kernel, d.mode)
	if err != nil {
		return err
	}
	st := o.reporter().Start()
	p, err := b.plan(ctx, d)
	if err != nil {
		return err
	}
	st.Done("read the kernel (%s) and diffed: %s", b.name(), p.summary())
	out, flush := o.colored(o.output, diffClass)
	if err := writePlan(out, o.output, b, p); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if !p.empty() {
		return ErrChanges
	}
	return nil
}

// planReport is the data form of a plan.
type planReport struct {
	Backend string       `json:"backend"`
	Summary diff.Summary `json:"summary"`
	Sets    any          `json:"changeSets"`
}

func writePlan(w io.Writer, format string, b kernelBackend, p kernelPlan) error {
	report := planReport{Backend: b.name(), Summary: p.summary(), Sets: p.data()}
	if format != "text" {
		return writeData(w, format, report)
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
