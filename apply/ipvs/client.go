package ipvs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// Client plans and applies ipvs mode in one network namespace.
type Client struct {
	// Kernel reads and writes IPVS, kube-ipvs0 and the ipsets
	// (OpenKernel's NetlinkKernel).
	Kernel Kernel
	// IPTables reads and writes the helper chains. Its Ownership must be
	// Ownership.Chains: its undo relies on it too.
	IPTables *applyipt.Client
	// Ownership is what the mode owns (render.IPVSOwnership): the helper
	// chains, the sets, which virtual servers, and the excluded ranges.
	// It is required.
	Ownership *ipvs.Ownership
	// PollInterval is how often WaitDrained looks at draining real servers
	// (default 1 s).
	PollInterval time.Duration
}

// Plan is one family's desired state, the live state read from the
// kernel, and the changes between them.
type Plan struct {
	Desired *ipvs.Ruleset
	Live    *ipvs.Ruleset
	Changes *diff.IPVSChangeSet
	// iptables is the helper chains' plan, for apply/iptables.
	iptables *applyipt.Plan
	// prefixes are the live kube-ipvs0 addresses with their prefix
	// lengths, which unbinding must name.
	prefixes map[netip.Addr]netip.Prefix
}

// Plan reads the kernel for each desired family and computes the changes.
func (c *Client) Plan(ctx context.Context, desired []*ipvs.Ruleset) ([]*Plan, error) {
	return c.plan(ctx, desired, false)
}

// PlanReset plans `reset`: removing every virtual server, address, set and
// helper chain the tool owns in the families, and kube-ipvs0 itself.
func (c *Client) PlanReset(ctx context.Context, families []nodetable.Family) ([]*Plan, error) {
	var empty []*ipvs.Ruleset
	for _, f := range families {
		empty = append(empty, diff.EmptyIPVS(f))
	}
	return c.plan(ctx, empty, true)
}

func (c *Client) plan(ctx context.Context, desired []*ipvs.Ruleset, reset bool) ([]*Plan, error) {
	if c.Ownership == nil || c.IPTables == nil || c.IPTables.Ownership != c.Ownership.Chains {
		return nil, errors.New("ipvs client: the ownership policy and the helper chains' client must be given, the client with Ownership.Chains")
	}
	var plans []*Plan
	for _, d := range desired {
		p, err := c.planFamily(ctx, d, reset)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func (c *Client) planFamily(ctx context.Context, d *ipvs.Ruleset, reset bool) (*Plan, error) {
	live, opts, prefixes, err := c.read(ctx, d)
	if err != nil {
		return nil, err
	}
	// The helper chains are planned by apply/iptables, which also keeps
	// track of its dump cache.
	wantIPT := d.IPTables
	if wantIPT == nil {
		wantIPT = diff.EmptyIPTables(d.Family)
	}
	iptPlans, err := c.IPTables.Plan(ctx, []*ipt.Ruleset{wantIPT})
	if err != nil {
		return nil, fmt.Errorf("read %s helper chains: %w", d.Family, err)
	}
	live.IPTables = iptPlans[0].Live
	opts.Reset = reset
	cs := diff.IPVS(d, live, c.Ownership, opts)
	iptPlans[0].Changes = cs.IPTables // the same changes, computed with the same owner
	return &Plan{Desired: d, Live: live, Changes: cs, prefixes: prefixes, iptables: iptPlans[0]}, nil
}

// read returns the live ruleset of d's family without its helper chains:
// the family's virtual servers, kube-ipvs0's addresses, the owned sets
// (and any other set d names).
func (c *Client) read(ctx context.Context, d *ipvs.Ruleset) (*ipvs.Ruleset, diff.IPVSOptions, map[netip.Addr]netip.Prefix, error) {
	f := d.Family
	var opts diff.IPVSOptions
	fail := func(err error) (*ipvs.Ruleset, diff.IPVSOptions, map[netip.Addr]netip.Prefix, error) {
		return nil, opts, nil, fmt.Errorf("read %s ipvs state: %w", f, err)
	}
	live := &ipvs.Ruleset{Family: f}
	var err error
	if live.VirtualServers, opts.Conns, err = c.Kernel.Services(f); err != nil {
		return fail(err)
	}
	exists, addrs, err := c.Kernel.Device(f)
	if err != nil {
		return fail(err)
	}
	opts.DeviceExists = exists
	prefixes := map[netip.Addr]netip.Prefix{}
	for _, p := range addrs {
		live.Addresses = append(live.Addresses, p.Addr())
		prefixes[p.Addr()] = p
	}
	names := slices.Clone(c.Ownership.Sets[f])
	for _, s := range d.Sets {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		s, err := c.Kernel.Set(name)
		if err != nil {
			return fail(err)
		}
		if s != nil {
			slices.Sort(s.Entries)
			live.Sets = append(live.Sets, s)
		}
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	return live, opts, prefixes, nil
}
