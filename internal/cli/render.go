package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// RenderOptions are the options of `render`.
type RenderOptions struct {
	*common
	source sourceFlags
	output string

	mode     Mode
	families []cluster.Family
	cfg      render.Config
}

func newRenderCommand(c *common) *cobra.Command {
	o := &RenderOptions{common: c}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the full desired ruleset for the node",
		Long: `Print the full ruleset that the node should hold, rendered from the cluster
(or from a snapshot file with -f) as kube-proxy v1.37 would program it.
The text form is the mode's native syntax (iptables-save for iptables mode);
-o json|yaml prints the same ruleset as data.`,
		Example: `  # Render the embedded example
  kubectl svcproxy render --example
  # Render a saved snapshot for node worker-1, IPv4 only
  kubectl get nodes,services,endpointslices -A -o yaml | kubectl svcproxy render -f - --node-name=worker-1 --family=ipv4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(cmd); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	o.source.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	return cmd
}

// Complete fills in defaults that depend on other flags.
func (o *RenderOptions) Complete(cmd *cobra.Command) error {
	o.source.complete(cmd, o.proxy)
	var err error
	if o.mode, err = o.proxy.mode(); err != nil {
		return err
	}
	if o.families, err = o.proxy.families(); err != nil {
		return err
	}
	o.cfg, err = o.proxy.RenderConfig()
	return err
}

// Validate checks the flags.
func (o *RenderOptions) Validate() error {
	if err := o.source.validate(); err != nil {
		return err
	}
	switch o.output {
	case "text", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: must be text, json or yaml", o.output)
	}
	if o.mode != ModeIPTables {
		return fmt.Errorf("--mode %s: rendering is not implemented yet; use --mode=iptables", o.mode)
	}
	return nil
}

// Run loads the cluster state, renders and prints.
func (o *RenderOptions) Run(cmd *cobra.Command) error {
	snap, err := o.load(cmd.Context(), &o.source)
	if err != nil {
		return err
	}
	tables, err := o.tables(snap)
	if err != nil {
		return err
	}
	var sets []*ipt.Ruleset
	for _, f := range o.families {
		sets = append(sets, render.IPTables(tables.ForFamily(f), o.cfg))
	}
	return writeRulesets(o.streams.Out, o.output, sets)
}

func writeRulesets(w io.Writer, format string, sets []*ipt.Ruleset) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sets)
	case "yaml":
		data, err := yaml.Marshal(sets)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return ipt.EncodeAll(w, sets)
}
