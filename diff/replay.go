package diff

import (
	"slices"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// ReplayIPTables returns what live becomes once cs is applied to it, as the
// kernel would hold it: changed chains take their new rules (edited ones in
// the order their edits leave them), deleted ones go, jumps are inserted
// first in their chain. Foreign chains and rules are kept
// as they were. live is not modified.
func ReplayIPTables(live *ipt.Ruleset, cs *IPTablesChangeSet) *ipt.Ruleset {
	out := &ipt.Ruleset{Family: live.Family}
	for _, t := range live.Tables {
		nt := &ipt.Table{Name: t.Name}
		for _, c := range t.Chains {
			nt.AddChain(&ipt.Chain{Name: c.Name, Policy: c.Policy, Rules: c.Rules})
		}
		out.Tables = append(out.Tables, nt)
	}
	for _, c := range cs.Changes {
		t := out.Table(c.Table)
		if t == nil {
			t = &ipt.Table{Name: c.Table}
			out.Tables = append(out.Tables, t)
		}
		replayChange(t, c)
	}
	out.Sort()
	return out
}

func replayChange(t *ipt.Table, c IPTablesChange) {
	chain := t.Chain(c.Chain)
	if chain == nil && c.Verb != DeleteChain {
		policy := "-"
		if ipt.IsBuiltin(t.Name, c.Chain) {
			policy = "ACCEPT"
		}
		chain = &ipt.Chain{Name: c.Chain, Policy: policy}
		t.AddChain(chain)
	}
	switch c.Verb {
	case CreateChain, ReplaceChain:
		chain.Rules = c.After()
	case DeleteChain:
		t.Chains = slices.DeleteFunc(t.Chains, func(x *ipt.Chain) bool { return x.Name == c.Chain })
	case InsertJump:
		chain.Rules = append([]ipt.Rule{c.Rules[0]}, chain.Rules...)
	case DeleteJump:
		if i := slices.Index(chain.Rules, c.Rules[0]); i >= 0 {
			chain.Rules = slices.Delete(slices.Clone(chain.Rules), i, i+1)
		}
	}
}
