// Package iptables traces a packet through an iptables ruleset held as
// data (ruleset/iptables): every rule is turned into matchers and a target
// once, at load, from the canonical iptables-save spelling that render
// emits and the kernel lists back. A match, option or target the
// evaluator does not know fails the load, naming the rule: a trace never
// skips a rule it cannot follow.
package iptables

import (
	"fmt"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// SetLookup resolves "-m set --match-set NAME DIRS" (ipvs mode's ipsets).
type SetLookup interface {
	Matcher(name string, dirs []string) (func(*trace.State) bool, error)
}

// Evaluator is one family's iptables ruleset, ready to trace.
type Evaluator struct {
	mode   string
	node   *trace.Node
	sets   SetLookup
	tables map[ipt.TableName]*table
}

type table struct {
	name   ipt.TableName
	chains map[string]*chain
}

type chain struct {
	name, policy string
	rules        []*rule
}

// Options are the optional parts of an Evaluator.
type Options struct {
	// Mode names the mode in results; "iptables" by default.
	Mode string
	// Sets resolves set matches; without it a set match is unknown.
	Sets SetLookup
}

// New parses rs for tracing on node n.
func New(rs *ipt.Ruleset, n *trace.Node, o Options) (*Evaluator, error) {
	ev := &Evaluator{mode: o.Mode, node: n, sets: o.Sets, tables: map[ipt.TableName]*table{}}
	if ev.mode == "" {
		ev.mode = "iptables"
	}
	for _, t := range rs.Tables {
		tt := &table{name: t.Name, chains: make(map[string]*chain, len(t.Chains))}
		for _, c := range t.Chains {
			cc := &chain{name: c.Name, policy: c.Policy, rules: make([]*rule, 0, len(c.Rules))}
			for _, r := range c.Rules {
				pr, err := ev.parseRule(string(r), r.Fields())
				if err != nil {
					return nil, &UnknownError{Table: string(t.Name), Chain: c.Name, Rule: string(r), What: err.Error()}
				}
				cc.rules = append(cc.rules, pr)
			}
			tt.chains[c.Name] = cc
		}
		ev.tables[t.Name] = tt
	}
	return ev, ev.checkJumps()
}

func (ev *Evaluator) checkJumps() error {
	for _, t := range ev.tables {
		for _, c := range t.chains {
			for _, r := range c.rules {
				if (r.kind == tJump || r.kind == tGoto) && t.chains[r.chain] == nil {
					return &UnknownError{Table: string(t.name), Chain: c.name, Rule: r.text,
						What: fmt.Sprintf("unknown target %q (no such chain in table %s)", r.chain, t.name)}
				}
			}
		}
	}
	return nil
}

// Mode names the mode.
func (ev *Evaluator) Mode() string { return ev.mode }

// hookTables lists, per hook, the tables and their built-in chain in
// netfilter's priority order.
var hookTables = map[trace.Hook][]ipt.TableName{
	trace.Prerouting:  {ipt.Raw, ipt.Mangle, ipt.NAT},
	trace.Input:       {ipt.Mangle, ipt.Filter, ipt.NAT},
	trace.Forward:     {ipt.Mangle, ipt.Filter},
	trace.Output:      {ipt.Raw, ipt.Mangle, ipt.NAT, ipt.Filter},
	trace.Postrouting: {ipt.Mangle, ipt.NAT},
}

var hookChain = map[trace.Hook]string{
	trace.Prerouting: "PREROUTING", trace.Input: "INPUT", trace.Forward: "FORWARD",
	trace.Output: "OUTPUT", trace.Postrouting: "POSTROUTING",
}

// Hook runs st through the hook's built-in chain of every table.
func (ev *Evaluator) Hook(h trace.Hook, st *trace.State) ([]*trace.State, error) {
	states := []*trace.State{st}
	for _, name := range hookTables[h] {
		t := ev.tables[name]
		if t == nil || t.chains[hookChain[h]] == nil || name == ipt.NAT && st.Looped {
			continue
		}
		var next []*trace.State
		for _, s := range states {
			if s.Ended() {
				next = append(next, s)
				continue
			}
			out, err := ev.builtin(t, t.chains[hookChain[h]], s)
			if err != nil {
				return nil, err
			}
			next = append(next, out...)
		}
		states = next
	}
	return states, nil
}

// builtin runs a built-in chain; what falls off its end meets the policy.
func (ev *Evaluator) builtin(t *table, c *chain, st *trace.State) ([]*trace.State, error) {
	bs, err := ev.run(t, c, st, 0)
	if err != nil {
		return nil, err
	}
	out := make([]*trace.State, 0, len(bs))
	for _, b := range bs {
		if b.status == fellOff && c.policy == "DROP" {
			b.st.Record(string(t.name), c.name, "policy DROP")
			b.st.End(trace.Drop)
		}
		out = append(out, b.st)
	}
	return out, nil
}
