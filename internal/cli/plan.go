package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
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
	out string
	// against is --against: the snapshot whose render stands for the
	// live side, instead of this node's kernel (against.go).
	against string
	// allNodes is --all-nodes: with against, one plan per node of the
	// snapshots, nodes with the same plan grouped (allnodes.go).
	allNodes bool
	// warnMu orders the warnings of --all-nodes' planners.
	warnMu sync.Mutex
	flags  *pflag.FlagSet
}

func newPlanCommand(c *common) *cobra.Command {
	o := &PlanOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts), kernel: kernelFlags{ipvs: true, lockFlags: true, conntrack: true}}
	o.proxy.onNode = true
	cmd := &cobra.Command{
		Use:     "plan",
		Aliases: []string{"diff"},
		Short:   "Show what apply would change in this node's kernel, or between two snapshots (also: diff)",
		Long: `Render the desired rules, read the live rules from this node's kernel, and
print the difference as a unified diff in the mode's native syntax. Only the
rules the tool owns are compared; everything else is left out.

With --against OLD, the live side is not read from a kernel: it is OLD
rendered for the same node with the same settings, so a change of the
cluster's Services can be reviewed in CI, on any system (docs/CI-REVIEW.md).
What only a kernel holds is then absent: IPVS connection counts (so no real
server drains), sysctls such as route_localnet, nfacct support, this
machine's addresses, and rules the tool does not own. --all-nodes plans
every node of the two snapshots and groups the nodes whose plans are the
same. -o markdown prints a summary for a pull-request comment.

Exit codes (as kubectl diff): 0 no changes, 1 changes, 2 error.`,
		Example: `  # What would apply change on this node? (on a node, as root)
  kubectl svcproxy plan --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  # The same for nftables mode, from a snapshot file, as JSON (on a node, as root)
  kubectl svcproxy plan --mode=nftables -f snapshot.yaml -o json
  # Review a change of the Services in CI, without a node: every node's plan, grouped (needs two snapshot files)
  kubectl svcproxy diff -f new.yaml --against old.yaml --all-nodes -o markdown`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml, markdown (a summary per Service and the diff, for a pull-request comment), name (with --against: the Services it changes, as kubectl's -o name), or a template as kubectl takes it (jsonpath=..., go-template=...)")
	cmd.Flags().StringVar(&o.out, "out", "", "also save the plan to this file, for apply FILE to execute exactly (see docs/SAVED-PLANS.md)")
	cmd.Flags().StringVar(&o.against, "against", "", "diff against this snapshot file rendered for the node ('-' for stdin) instead of the node's kernel; runs on any system")
	cmd.Flags().BoolVar(&o.allNodes, "all-nodes", false, "with --against: plan every node of the two snapshots and group the nodes whose plans are identical")
	markNeedsLinux(cmd, "it reads this node's kernel rules")
	cmd.Annotations[offNodeFlagAnnotation] = "against"
	return cmd
}

// Complete reads the config file and parses the settings, with the node's
// sysctls.
func (o *PlanOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.flags = cmd.Flags()
	// Against a file nothing is read from this machine.
	o.proxy.onNode = o.against == ""
	return completeRender(cmd, &o.input, o.proxy)
}

// Validate checks the flags.
func (o *PlanOptions) Validate() error {
	if o.output == outputName && (o.against == "" || o.allNodes) {
		return fmt.Errorf("--output name lists the Services one node's plan changes, which needs --against and no --all-nodes: a node's kernel holds rules, not Services")
	}
	if err := validateOutput(o.output); err != nil && o.output != "markdown" && o.output != outputName {
		if _, template, _ := templatePrinter(o.output); template {
			return err // a template that does not parse: say why
		}
		return fmt.Errorf("--output %q: must be text, json, yaml, markdown, name, or a template as kubectl takes it (jsonpath=..., go-template=...)", o.output)
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	if err := o.validateAgainst(); err != nil {
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
	if o.against != "" {
		return o.runAgainst(ctx)
	}
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
	p, err := planKernel(ctx, &o.kernel, b, d, o.streams.ErrOut)
	if err != nil {
		return err
	}
	st.Done("read the kernel (%s) and diffed: %s", b.name(), p.summary())
	out, flush := o.colored(o.output, diffClass)
	head := planHead{mode: d.mode, backend: b.name(), node: settings.cluster.NodeName,
		noChanges: fmt.Sprintf("No changes: the node's %s rules match the cluster.", b.name())}
	if err := o.writePlan(out, head, p, nil); err != nil {
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
