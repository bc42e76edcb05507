package cli

import (
	"context"

	"github.com/spf13/cobra"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// RenderOptions are the options of `render`.
type RenderOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	output string
}

func newRenderCommand(c *common) *cobra.Command {
	// render reads nothing from the node it runs on: it is a function of
	// its inputs.
	o := &RenderOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts)}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the full desired ruleset for the node",
		Long: `Print the full ruleset that the node should hold, rendered from the cluster
(or from a snapshot file with -f) as kube-proxy v1.37 would program it.
The text form is the mode's native syntax (iptables-save for iptables mode,
what nft lists for nftables mode, ipvsadm-save plus ipsets, addresses and
helper chains for ipvs mode, the proxy-port map and portal rules for
userspace mode);
-o json|yaml prints the same ruleset as data: a RenderedRuleset object
(apiVersion svcproxy.kubectl.io/v1alpha1), described in docs/OUTPUT.md.`,
		Example: `  # Render the embedded example
  kubectl svcproxy render --example
  # The same in nftables mode, IPv4 only, as JSON
  kubectl svcproxy render --example --mode=nftables --family=ipv4 -o json
  # Render what kubectl prints, for node worker-1 (needs a cluster)
  kubectl get nodes,services,endpointslices -A -o yaml | kubectl svcproxy render -f - --node-name=worker-1 --family=ipv4`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml, name (the Services rendered, as kubectl's -o name), or a template as kubectl takes it (jsonpath=..., go-template=..., and their -file forms)")
	return cmd
}

// Complete reads the config file and parses the settings.
func (o *RenderOptions) Complete(cmd *cobra.Command, _ []string) error {
	return completeRender(cmd, &o.input, o.proxy)
}

// Validate checks the flags.
func (o *RenderOptions) Validate() error {
	if err := validateOutput(o.output); err != nil && o.output != outputName {
		return err
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	return o.proxy.validateRender(allModes...)
}

// Run loads the cluster state, renders and prints.
func (o *RenderOptions) Run(ctx context.Context) error {
	d, err := o.renderDesired(ctx, &o.input, &o.proxy.settings)
	if err != nil {
		return err
	}
	if o.output == outputName {
		return printServiceNames(o.streams.Out, renderedServices(d))
	}
	if o.output != "text" {
		return writeData(o.streams.Out, o.output, newRenderedRuleset(d))
	}
	switch d.mode {
	case ModeUserspace:
		return userspace.EncodeAll(o.streams.Out, d.userspace)
	case ModeIPVS:
		return ipvs.EncodeAll(o.streams.Out, d.ipvs)
	case ModeNFTables:
		return nft.EncodeAll(o.streams.Out, d.nftables)
	}
	return ipt.EncodeAll(o.streams.Out, d.iptables)
}
