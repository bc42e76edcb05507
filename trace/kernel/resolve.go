package kernel

import (
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// RulesOf names the rules of trace events from the proxy's rules as read
// from the kernel (nftables tables, or iptables rulesets, whichever the
// mode has), finding each rule's place in its chain through ps.
func RulesOf(nftables []*nft.Ruleset, iptables []*ipt.Ruleset, ps *Positions) Resolver {
	return func(ev Event) (trace.Step, bool, error) {
		if ev.Type != "rule" && (ev.Type != "policy" || ev.Verdict != "drop") {
			return trace.Step{}, false, nil
		}
		table, rules, policy, ok := nftChain(nftables, ev)
		if !ok {
			table, rules, policy, ok = iptChain(iptables, ev)
		}
		if !ok {
			return trace.Step{}, false, nil
		}
		step := trace.Step{Table: table, Chain: ev.Chain, Rule: policy}
		if ev.Type == "policy" {
			return step, true, nil
		}
		i, err := ps.Of(ev.Family, ev.Table, ev.Chain, ev.Handle)
		if err != nil {
			return step, false, err
		}
		if i < 0 || i >= len(rules) {
			step.Rule = fmt.Sprintf("(rule handle %d, not among the rules read: the table changed during the trace)", ev.Handle)
		} else {
			step.Rule = rules[i]
		}
		return step, true, nil
	}
}

// nftChain finds the event's chain among nftables tables: the table as
// the trace names it, the chain's rules, and how a policy drop is shown.
func nftChain(rulesets []*nft.Ruleset, ev Event) (table string, rules []string, policy string, ok bool) {
	for _, rs := range rulesets {
		if string(rs.Family) != ev.Family || rs.Table != ev.Table {
			continue
		}
		if ch := rs.Chain(ev.Chain); ch != nil {
			return ev.Family + " " + ev.Table, strs(ch.Rules), "policy drop", true
		}
	}
	return "", nil, "", false
}

// iptChain is nftChain for iptables rulesets, whose tables iptables-nft
// keeps as the nf_tables tables of the same name.
func iptChain(rulesets []*ipt.Ruleset, ev Event) (table string, rules []string, policy string, ok bool) {
	fam := map[string]nodetable.Family{"ip": nodetable.IPv4, "ip6": nodetable.IPv6}[ev.Family]
	for _, rs := range rulesets {
		if fam == "" || rs.Family != fam {
			continue
		}
		if t := rs.Table(ipt.TableName(ev.Table)); t != nil {
			if ch := t.Chain(ev.Chain); ch != nil {
				return ev.Table, strs(ch.Rules), "policy DROP", true
			}
		}
	}
	return "", nil, "", false
}

func strs[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
