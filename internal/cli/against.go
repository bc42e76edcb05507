package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// plan --against: the live side of the plan is not read from a kernel
// but rendered from a second snapshot, for the same node and with the
// same settings, and diffed with the same diff and ownership as a kernel
// would be. Nothing here reads the node it runs on, so it runs anywhere.

// renderAgainst renders the node of s from snap, the live side of a
// plan --against. A snapshot whose Nodes do not include the node gives
// nil: the node is new, and its live side is empty.
func (c *common) renderAgainst(s *renderSettings, snap *cluster.Snapshot) (*desired, error) {
	d, err := c.renderSnapshot(s, snap)
	var missing *cluster.NodeNotFoundError
	if errors.As(err, &missing) && missing.Err == nil {
		return nil, nil
	}
	return d, err
}

// diffDesired diffs want against live (nil: a node that has nothing yet)
// in want's mode, with that mode's ownership, as plan diffs a kernel.
// liveName names where live came from, for the diff's header.
func diffDesired(want, live *desired, liveName string, excluded []netip.Prefix, checked *checkedChains) (kernelPlan, error) {
	switch want.mode {
	case ModeIPTables, ModeUserspace:
		own := render.IPTablesOwnership()
		if want.mode == ModeUserspace {
			own = render.UserspaceOwnership()
		}
		var sets []*diff.IPTablesChangeSet
		for i, f := range want.families {
			w, l := iptablesOf(want, i), diff.EmptyIPTables(f)
			if live != nil {
				l = iptablesOf(live, i)
			}
			if err := checked.validate(w); err != nil {
				return nil, fmt.Errorf("refusing the rendered rules: %w", err)
			}
			sets = append(sets, diff.IPTables(w, l, own))
		}
		return newChangeSetPlan(liveName, sets, func(cs *diff.IPTablesChangeSet) nodetable.Family { return cs.Family }), nil
	case ModeNFTables:
		var sets []*diff.NFTablesChangeSet
		for i, w := range want.nftables {
			var l *nft.Ruleset
			if live != nil {
				l = live.nftables[i]
			}
			sets = append(sets, diff.NFTables(w, l))
		}
		return newChangeSetPlan(liveName, sets, func(cs *diff.NFTablesChangeSet) nodetable.Family { return familyOfNFT(cs.Family) }), nil
	}
	own := render.IPVSOwnership(excluded)
	var sets []*diff.IPVSChangeSet
	for i, w := range want.ipvs {
		l := diff.EmptyIPVS(w.Family)
		if live != nil {
			l = live.ipvs[i]
		}
		sets = append(sets, diff.IPVS(w, l, own, diff.IPVSOptions{DeviceExists: live != nil}))
	}
	return newChangeSetPlan(liveName, sets, func(cs *diff.IPVSChangeSet) nodetable.Family { return cs.Family }), nil
}

// checkedChains remembers the chains already validated, for --all-nodes,
// whose renders share most chains (read-only) with the node before. A nil
// *checkedChains remembers nothing.
type checkedChains struct {
	ok map[*ipt.Chain]bool
}

// validate checks rs as ipt.Ruleset.Validate does, skipping the chains
// checked before.
func (c *checkedChains) validate(rs *ipt.Ruleset) error {
	if c == nil {
		return rs.Validate()
	}
	if c.ok == nil {
		c.ok = map[*ipt.Chain]bool{}
	}
	for _, t := range rs.Tables {
		for _, ch := range t.Chains {
			if c.ok[ch] {
				continue
			}
			one := &ipt.Ruleset{Family: rs.Family, Tables: []*ipt.Table{{Name: t.Name, Chains: []*ipt.Chain{ch}}}}
			if err := one.Validate(); err != nil {
				return err
			}
			c.ok[ch] = true
		}
	}
	return nil
}

// iptablesOf is the i-th family's iptables rules of d: the ruleset of
// iptables mode, the portal chains of userspace mode.
func iptablesOf(d *desired, i int) *ipt.Ruleset {
	if d.mode == ModeUserspace {
		return d.userspace[i].IPTables
	}
	return d.iptables[i]
}

func familyOfNFT(f nft.Family) nodetable.Family {
	if f == nft.IPv6 {
		return nodetable.IPv6
	}
	return nodetable.IPv4
}

// changeSetPlan is a plan made of change sets alone, with no kernel
// behind them: plan --against's. It cannot be applied or saved.
type changeSetPlan[P changeSet] struct {
	modePlan[P]
}

func newChangeSetPlan[P changeSet](liveName string, sets []P, family func(P) nodetable.Family) *changeSetPlan[P] {
	return &changeSetPlan[P]{modePlan[P]{
		liveName: liveName, plans: sets,
		changes: func(p P) changeSet { return p },
		family:  family,
		ports:   func(P) servicePorts { return servicePorts{} },
	}}
}

// planText is the plan's diff text, which --all-nodes groups nodes by.
func planText(p kernelPlan) (string, error) {
	var b strings.Builder
	err := p.writeText(&b)
	return b.String(), err
}
