package diff

import (
	"slices"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Edit is one change to a chain's rules that names its rule by content, so
// that no other writer can misdirect it: however many rules someone adds
// to or removes from the chain between the read and the restore, it still
// deletes the rule it names and inserts where it says.
//
//   - Delete removes the first rule equal to Rule (iptables -D CHAIN spec);
//   - otherwise Rule is inserted first in the chain (-I CHAIN 1), or with
//     Append last (-A), which is where a must-be-last rule goes.
//
// Only chains whose order carries no meaning are edited (see
// unorderedEdits): a rule numbered from an earlier read can name another
// rule by the time the restore runs, so an ordered chain that changes is
// rewritten whole.
type Edit struct {
	Delete bool
	Append bool
	Rule   ipt.Rule
}

// unorderedEdits returns the edits that give an unordered chain holding
// live the rules of desired: the live rules desired does not hold (or holds
// fewer times) deleted, desired's missing rules inserted first, in
// desired's order, and its missing must-be-last rules appended. ok is
// false when rewriting the chain is shorter, or when live has a
// must-be-last rule before another (edits never move a rule).
func unorderedEdits(desired, live []ipt.Rule, own *ipt.Ownership) (edits []Edit, ok bool) {
	if _, _, ok := splitTail(live, own); !ok {
		return nil, false
	}
	want := map[ipt.Rule]int{}
	for _, r := range desired {
		want[r]++
	}
	for _, r := range live {
		if want[r] > 0 {
			want[r]--
			continue
		}
		edits = append(edits, Edit{Delete: true, Rule: r})
	}
	var body, tail []Edit
	for _, r := range desired {
		if want[r] == 0 {
			continue
		}
		want[r]--
		if own.MustBeLast(r) {
			tail = append(tail, Edit{Append: true, Rule: r})
		} else {
			body = append(body, Edit{Rule: r})
		}
	}
	// Each insert goes first, so the last one inserted ends up first.
	slices.Reverse(body)
	edits = append(append(edits, body...), tail...)
	if len(edits) > len(desired) {
		return nil, false
	}
	return edits, true
}

// After returns the chain's rules as the kernel holds them once the change
// is made: its new rules, or for a chain edited in place (Edits), the
// live rules with the edits applied, in the order the edits leave them.
func (c IPTablesChange) After() []ipt.Rule {
	if c.Verb != ReplaceChain || len(c.Edits) == 0 {
		return c.Rules
	}
	out := slices.Clone(c.Old)
	for _, e := range c.Edits {
		switch {
		case e.Delete:
			if i := slices.Index(out, e.Rule); i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		case e.Append:
			out = append(out, e.Rule)
		default:
			out = slices.Insert(out, 0, e.Rule)
		}
	}
	return out
}
