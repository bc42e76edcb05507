package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// renderSettings are what one render needs, parsed from the flags by
// ProxyFlags' Complete and checked by its Validate; a long-running command
// renders many snapshots with the same settings.
type renderSettings struct {
	mode      Mode
	families  []nodetable.Family
	cluster   cluster.Config
	cfg       render.Config
	ipvs      render.IPVSOptions
	userspace render.UserspaceOptions
	// onNode is set for the commands that run on the node (plan, apply,
	// proxy): they read the node's sysctls once and its interface
	// addresses at every render, as kube-proxy does. render stays a
	// function of its inputs.
	onNode bool
}

// desired is the rendered state of every selected family.
type desired struct {
	mode      Mode
	tables    *nodetable.Tables
	families  []nodetable.Family
	iptables  []*ipt.Ruleset
	nftables  []*nft.Ruleset
	ipvs      []*ipvs.Ruleset
	userspace []*userspace.Ruleset
	cfg       render.Config
}

// completeRender is the Complete of the commands that render: the config
// file first (the command line wins over it), then the example's node name
// (the config file's wins over it), then the settings parsed.
func completeRender(cmd *cobra.Command, in *inputFlags, p *ProxyFlags) error {
	if err := p.Complete(cmd); err != nil {
		return err
	}
	in.complete(cmd, p)
	return p.completeSettings()
}

// renderDesired loads the cluster state and renders it.
func (c *common) renderDesired(ctx context.Context, in *inputFlags, s *renderSettings) (*desired, error) {
	snap, err := c.load(ctx, in, s.cluster.NodeName)
	if err != nil {
		return nil, err
	}
	return c.renderSnapshot(s, snap)
}

// renderSnapshot renders snap with settings s into a new desired state.
func (c *common) renderSnapshot(s *renderSettings, snap *cluster.Snapshot) (*desired, error) {
	st := c.reporter().Start(fmt.Sprintf("rendering %d Services (%s)", len(snap.Services), s.mode))
	defer st.End()
	tables, err := c.tables(snap, s.cluster)
	if err != nil {
		return nil, err
	}
	d := c.renderTables(s, tables)
	for _, rs := range d.userspace {
		c.warnUnallocated(rs, s.userspace.PortRange)
	}
	st.Done("rendered %d rules (%s)", ruleCount(d), d.mode)
	return d, nil
}

// renderTables renders built tables with settings s.
func (c *common) renderTables(s *renderSettings, tables *nodetable.Tables) *desired {
	return renderTablesWith(s, tables, c.iptRenderers, c.nftRenderers)
}

// renderTablesWith renders built tables with settings s, and with the
// renderers given for a family (nil: none, each render anew).
func renderTablesWith(s *renderSettings, tables *nodetable.Tables, iptR map[nodetable.Family]*render.IPTablesRenderer, nftR map[nodetable.Family]*render.NFTablesRenderer) *desired {
	d := &desired{mode: s.mode, families: s.families, cfg: s.cfg, tables: tables}
	if s.onNode && len(d.cfg.HostAddresses) == 0 {
		// Read at every render: in watch mode addresses come and go.
		d.cfg.HostAddresses = hostAddresses()
	}
	for _, f := range d.families {
		table := d.tables.ForFamily(f)
		switch d.mode {
		case ModeIPTables:
			d.iptables = append(d.iptables, renderIPTables(iptR[f], table, d.cfg))
		case ModeNFTables:
			d.nftables = append(d.nftables, renderNFTables(nftR[f], table, d.cfg))
		case ModeIPVS:
			d.ipvs = append(d.ipvs, render.IPVS(table, d.cfg, s.ipvs))
		case ModeUserspace:
			d.userspace = append(d.userspace, render.Userspace(table, d.cfg, s.userspace))
		}
	}
	return d
}

// renderNFTables renders one family's nftables table, with that family's
// renderer r when the command keeps them (watch mode, --all-nodes).
func renderNFTables(r *render.NFTablesRenderer, t *nodetable.ServiceTable, cfg render.Config) *nft.Ruleset {
	if r != nil {
		return r.Render(t, cfg)
	}
	return render.NFTables(t, cfg)
}

// renderIPTables renders one family's iptables tables, with that family's
// renderer r when the command keeps them (watch mode, --all-nodes).
func renderIPTables(r *render.IPTablesRenderer, t *nodetable.ServiceTable, cfg render.Config) *ipt.Ruleset {
	if r != nil {
		return r.Render(t, cfg)
	}
	return render.IPTables(t, cfg)
}

// warnUnallocated warns about each Service port of rs that got no proxy
// port because the range is full: it gets no portal rules and no proxy,
// as kube-proxy v1.25's userspace proxier logged an error for each port
// it could not allocate and carried on with the others.
func (c *common) warnUnallocated(rs *userspace.Ruleset, r render.ProxyPortRange) {
	r = r.OrDefault()
	proxied := 0
	for i := range rs.Ports {
		if p := rs.Ports[i].Name.Protocol; p == nodetable.TCP || p == nodetable.UDP {
			proxied++
		}
	}
	for i := range rs.Ports {
		p := &rs.Ports[i]
		if p.ProxyPort != 0 || (p.Name.Protocol != nodetable.TCP && p.Name.Protocol != nodetable.UDP) {
			continue
		}
		c.warnOnce(fmt.Sprintf("service port %s/%s: no proxy port left in the proxy port range %s (%d ports, less the NodePorts in it, for %d TCP and UDP Service ports): not proxied, no portal rules",
			p.Name, p.Name.Protocol.Lower(), r, r.Size(), proxied))
	}
}
