// Package nftables traces a packet through kube-proxy's nftables table
// held as data (ruleset/nftables): each rule, kept as the text `nft list`
// prints, is compiled once into expressions and statements, sets and maps
// are indexed, and the base chains of each hook run in priority order.
// verdict maps, numgen, affinity sets, fib, ct, marks, masquerade and
// dnat are followed; an expression or statement the evaluator does not
// know fails the load and names the rule.
package nftables

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// Evaluator is one nftables table, ready to trace.
type Evaluator struct {
	node   *trace.Node
	table  string // "ip kube-proxy"
	sets   map[string]*set
	chains map[string][]*rule
	hooks  map[trace.Hook][]baseChain
	raw    map[string]*nft.Chain
}

type baseChain struct {
	name     string
	priority int
	policy   nft.Policy
	nat      bool
}

// UnknownError is a rule the evaluator cannot follow.
type UnknownError struct {
	Table, Chain, Rule, What string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("cannot trace %s chain %s rule %q: %s", e.Table, e.Chain, e.Rule, e.What)
}

// New compiles rs for tracing on node n.
func New(rs *nft.Ruleset, n *trace.Node) (*Evaluator, error) {
	ev := &Evaluator{node: n, table: string(rs.Family) + " " + rs.Table, sets: map[string]*set{},
		chains: map[string][]*rule{}, hooks: map[trace.Hook][]baseChain{}, raw: map[string]*nft.Chain{}}
	for _, s := range rs.Sets {
		ev.sets[s.Name] = indexSet(s)
	}
	for _, c := range rs.Chains {
		ev.raw[c.Name] = c
	}
	for _, c := range rs.Chains {
		rules := make([]*rule, 0, len(c.Rules))
		for _, r := range c.Rules {
			cr, err := ev.compile(string(r))
			if err != nil {
				return nil, &UnknownError{Table: ev.table, Chain: c.Name, Rule: string(r), What: err.Error()}
			}
			rules = append(rules, cr)
		}
		ev.chains[c.Name] = rules
		if c.Base != nil {
			if err := ev.addBase(c); err != nil {
				return nil, err
			}
		}
	}
	for h := range ev.hooks {
		slices.SortStableFunc(ev.hooks[h], func(a, b baseChain) int { return cmp.Compare(a.priority, b.priority) })
	}
	return ev, nil
}

func (ev *Evaluator) chainRules(name string) *nft.Chain { return ev.raw[name] }

func (ev *Evaluator) addBase(c *nft.Chain) error {
	prio, err := parsePriority(string(c.Base.Priority))
	if err != nil {
		return &UnknownError{Table: ev.table, Chain: c.Name, Rule: "priority " + string(c.Base.Priority), What: err.Error()}
	}
	h := trace.Hook(c.Base.Hook)
	switch h {
	case trace.Prerouting, trace.Input, trace.Forward, trace.Output, trace.Postrouting:
	default:
		return &UnknownError{Table: ev.table, Chain: c.Name, Rule: "hook " + string(c.Base.Hook), What: "unknown hook"}
	}
	ev.hooks[h] = append(ev.hooks[h], baseChain{name: c.Name, priority: prio, policy: c.Base.Policy, nat: c.Base.Type == nft.NATType})
	return nil
}

var namedPriorities = map[string]int{"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}

// parsePriority reads "dstnat - 10", "filter", "-110".
func parsePriority(s string) (int, error) {
	f := strings.Fields(s)
	base, ok := namedPriorities[f[0]]
	if !ok {
		return strconv.Atoi(s)
	}
	if len(f) == 3 {
		n, err := strconv.Atoi(f[2])
		if err != nil || (f[1] != "+" && f[1] != "-") {
			return 0, fmt.Errorf("bad priority %q", s)
		}
		if f[1] == "-" {
			n = -n
		}
		return base + n, nil
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("bad priority %q", s)
	}
	return base, nil
}

// Mode names the mode.
func (ev *Evaluator) Mode() string { return "nftables" }

// Hook runs st through the base chains of h, by priority. An accept ends
// one base chain; the packet meets the next.
func (ev *Evaluator) Hook(h trace.Hook, st *trace.State) ([]*trace.State, error) {
	states := []*trace.State{st}
	for _, bc := range ev.hooks[h] {
		if bc.nat && st.Looped {
			continue
		}
		var next []*trace.State
		for _, s := range states {
			if s.Ended() {
				next = append(next, s)
				continue
			}
			out, err := ev.run(bc.name, s, 0)
			if err != nil {
				return nil, err
			}
			for _, r := range out {
				if r.kind == kCont && bc.policy == nft.Drop {
					r.st.Record(ev.table, bc.name, "policy drop")
					r.st.End(trace.Drop)
				}
				next = append(next, r.st)
			}
		}
		states = next
	}
	return states, nil
}
