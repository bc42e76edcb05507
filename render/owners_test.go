package render_test

import (
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// Every mode's ownership covers everything its render emits, on every
// golden case: a chain, jump, set or table the render writes but the
// ownership does not name would be written by apply and then never
// compared, repaired or removed.
func TestOwnershipCoversRender(t *testing.T) {
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.Name, func(t *testing.T) {
			iptRulesets, _ := gc.renderIPTables(t, gc.Input)
			for _, rs := range iptRulesets {
				assertOwnsChains(t, "iptables", rs, render.IPTablesOwnership())
			}
			ipvsRulesets, _ := gc.renderIPVS(t, gc.Input)
			own := render.IPVSOwnership(nil)
			for _, rs := range ipvsRulesets {
				assertOwnsChains(t, "ipvs", rs.IPTables, own.Chains)
				assertOwnsSets(t, rs, own)
			}
			usRulesets, _ := gc.renderUserspace(t, gc.Input)
			for _, rs := range usRulesets {
				assertOwnsChains(t, "userspace", rs.IPTables, render.UserspaceOwnership())
			}
			nftRulesets, _ := gc.renderNFTables(t, gc.Input)
			nftOwn := render.NFTablesOwnership()
			for _, rs := range nftRulesets {
				if rs.Table != nftOwn.Table || !slices.Contains(nftOwn.Families, rs.Family) {
					t.Errorf("nftables: table %s %s is not owned (%+v)", rs.Family, rs.Table, nftOwn)
				}
			}
		})
	}
}

func assertOwnsChains(t *testing.T, mode string, rs *ipt.Ruleset, own *ipt.Ownership) {
	t.Helper()
	for _, tbl := range rs.Tables {
		for _, c := range tbl.Chains {
			if !ipt.IsBuiltin(tbl.Name, c.Name) {
				if !own.Owns(tbl.Name, c.Name) {
					t.Errorf("%s: rendered chain %s/%s is not owned", mode, tbl.Name, c.Name)
				}
				continue
			}
			for _, r := range c.Rules {
				if !own.OwnsJump(tbl.Name, r) {
					t.Errorf("%s: rendered rule in %s/%s is not an owned jump: %s", mode, tbl.Name, c.Name, r)
				}
			}
		}
	}
}

func assertOwnsSets(t *testing.T, rs *ipvs.Ruleset, own *ipvs.Ownership) {
	t.Helper()
	owned := map[string]bool{}
	for _, s := range own.Sets[rs.Family] {
		owned[s] = true
	}
	for _, s := range rs.Sets {
		if !owned[s.Name] {
			t.Errorf("ipvs: rendered set %s is not owned in %s", s.Name, rs.Family)
		}
	}
	for _, name := range own.PortSets[rs.Family] {
		if rs.Set(name) == nil {
			t.Errorf("ipvs: the NodePort set %s is not rendered in %s", name, rs.Family)
		}
	}
	if rs.Set(own.AddrPortSets[rs.Family]) == nil {
		t.Errorf("ipvs: the SCTP NodePort set is not rendered in %s", rs.Family)
	}
}
