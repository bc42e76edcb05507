package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

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
	// userspaceOpts are the userspace mode's proxy-port range and address.
	userspaceOpts render.UserspaceOptions
	// onNode is set for the commands that run on the node (plan, apply,
	// reset, proxy): they read the node's interface addresses and sysctls,
	// as kube-proxy does. render stays a function of its inputs.
	onNode bool
}

// renderDesired loads the cluster state and renders the selected mode;
// modes lists the modes the calling command supports.
func (c *common) renderDesired(cmd *cobra.Command, src *sourceFlags, modes ...Mode) (*desired, error) {
	settings, err := c.renderSettings(cmd, src, modes...)
	if err != nil {
		return nil, err
	}
	snap, err := c.load(cmd.Context(), src)
	if err != nil {
		return nil, err
	}
	return c.renderSnapshot(settings, snap)
}

// renderSettings validates the flags and returns the mode, families and
// render settings, with nothing rendered yet.
func (c *common) renderSettings(cmd *cobra.Command, src *sourceFlags, modes ...Mode) (*desired, error) {
	src.complete(cmd, c.proxy)
	if err := src.validate(); err != nil {
		return nil, err
	}
	mode, err := c.proxy.mode()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(modes, mode) {
		return nil, fmt.Errorf("--mode %s: not implemented for %s", mode, cmd.Name())
	}
	d := &desired{mode: mode}
	if d.families, err = c.proxy.families(); err != nil {
		return nil, err
	}
	if d.cfg, err = c.proxy.RenderConfig(); err != nil {
		return nil, err
	}
	if mode == ModeIPVS {
		if err := (render.IPVSOptions{Scheduler: c.proxy.IPVSScheduler}).Validate(); err != nil {
			return nil, fmt.Errorf("--ipvs-scheduler: %w", err)
		}
	}
	if d.userspaceOpts, err = c.proxy.userspaceOptions(); err != nil {
		return nil, err
	}
	if cmd.Name() != "render" {
		d.onNode = true
		readNodeSysctls(&d.cfg)
	}
	return d, nil
}

// renderSnapshot renders snap with the settings from renderSettings into a
// new desired state.
func (c *common) renderSnapshot(settings *desired, snap *cluster.Snapshot) (*desired, error) {
	d := &desired{mode: settings.mode, families: settings.families, cfg: settings.cfg, userspaceOpts: settings.userspaceOpts, onNode: settings.onNode}
	if d.onNode && len(d.cfg.HostAddresses) == 0 {
		// Read at every render: in watch mode addresses come and go.
		d.cfg.HostAddresses = hostAddresses()
	}
	var err error
	if d.tables, err = c.tables(snap); err != nil {
		return nil, err
	}
	for _, f := range d.families {
		table := d.tables.ForFamily(f)
		switch d.mode {
		case ModeIPTables:
			d.iptables = append(d.iptables, render.IPTables(table, d.cfg))
		case ModeNFTables:
			d.nftables = append(d.nftables, render.NFTables(table, d.cfg))
		case ModeIPVS:
			d.ipvs = append(d.ipvs, render.IPVS(table, d.cfg, render.IPVSOptions{Scheduler: c.proxy.IPVSScheduler}))
		case ModeUserspace:
			d.userspace = append(d.userspace, render.Userspace(table, d.cfg, d.userspaceOpts))
		}
	}
	return d, nil
}
