package cli

import (
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/conntrack"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// syncStats is what a sync of apply --watch did in each family, for the
// metrics kube-proxy sets after its syncs: the Service ports left without
// local endpoints, the stale-flow cleanups, and in iptables mode the rules
// owned and written per table.
func syncStats(d *desired, p kernelPlan, cleanups map[nodetable.Family]*metrics.ConntrackRun) []metrics.FamilyStats {
	var out []metrics.FamilyStats
	for i, f := range d.families {
		s := metrics.FamilyStats{Family: f, Conntrack: cleanups[f]}
		s.NoLocalInternal, s.NoLocalExternal = metrics.NoLocalEndpoints(d.tables.ForFamily(f), d.mode == ModeIPVS)
		if d.mode == ModeIPTables && i < len(d.iptables) {
			s.IPTablesRules = rulesPerTable(d.iptables[i])
			s.IPTablesWritten = writtenPerTable(p, f)
		}
		out = append(out, s)
	}
	return out
}

// rulesPerTable counts the rules of the filter and nat tables in the
// tool's own chains, as kube-proxy counts the rules of its restore input;
// the jumps from the built-in chains, which it ensures apart, are not
// among them.
func rulesPerTable(rs *ipt.Ruleset) map[string]int {
	out := map[string]int{string(ipt.Filter): 0, string(ipt.NAT): 0}
	for _, t := range rs.Tables {
		if _, ok := out[string(t.Name)]; !ok {
			continue
		}
		for _, c := range t.Chains {
			if !builtinChain(c.Name) {
				out[string(t.Name)] += len(c.Rules)
			}
		}
	}
	return out
}

// builtinChain says whether name is one of the kernel's chains of the
// filter and nat tables.
func builtinChain(name string) bool {
	switch name {
	case "INPUT", "FORWARD", "OUTPUT", "PREROUTING", "POSTROUTING":
		return true
	}
	return false
}

// writtenPerTable counts the rules the plan writes in family f, per
// table: the rules of each chain it creates or replaces, and each jump
// rule it adds.
func writtenPerTable(p kernelPlan, f nodetable.Family) map[string]int {
	out := map[string]int{string(ipt.Filter): 0, string(ipt.NAT): 0}
	ip, ok := p.(*iptablesPlan)
	if !ok {
		return out
	}
	for _, pl := range ip.plans {
		if pl.Desired.Family != f {
			continue
		}
		for _, c := range pl.Changes.Changes {
			if _, ok := out[string(c.Table)]; ok {
				out[string(c.Table)] += len(c.Rules)
			}
		}
	}
	return out
}

// cleanConntrackTimed is cleanConntrack's cleanup of one family, timed
// for kube-proxy's conntrack reconciler metrics.
func cleanConntrackTimed(t *nodetable.ServiceTable) (*metrics.ConntrackRun, error) {
	start := time.Now()
	n, err := conntrack.CleanStaleUDP(t)
	return &metrics.ConntrackRun{Took: time.Since(start), Deleted: n}, err
}
