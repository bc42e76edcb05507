// Package diff compares a desired ruleset with the live one read from the
// kernel, both of the same type, and produces an ordered change set: the
// only changes that apply needs to make, and what plan shows.
package diff

import (
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Verb is what a change does.
type Verb string

const (
	CreateChain  Verb = "create-chain"  // a missing chain, with its rules
	ReplaceChain Verb = "replace-chain" // an existing chain whose rules differ
	DeleteChain  Verb = "delete-chain"  // a chain the tool owns that is no longer wanted
	InsertJump   Verb = "insert-jump"   // a missing jump rule in a built-in chain
	DeleteJump   Verb = "delete-jump"   // a stale jump rule in a built-in chain
)

// IPTablesChange is one change to one chain.
type IPTablesChange struct {
	Verb  Verb          `json:"verb"`
	Table ipt.TableName `json:"table"`
	Chain string        `json:"chain"`
	// Rules are the chain's new rules (create, replace) or the one jump rule.
	Rules []ipt.Rule `json:"rules,omitempty"`
	// Old are the chain's live rules (replace, delete), for the plan.
	Old []ipt.Rule `json:"old,omitempty"`
	// Edits, when set, turn a replaced unordered chain's Old into Rules
	// in place, each naming its rule by content (see Edit); otherwise a
	// replaced chain is rewritten whole. After gives the rules they leave.
	Edits []Edit `json:"-"`
}

// IPTablesChangeSet is every change for one family, in the order apply runs
// them: per table, chains created and replaced (by name), jump rules
// inserted and deleted, then chains deleted.
type IPTablesChangeSet struct {
	Family  nodetable.Family `json:"family"`
	Changes []IPTablesChange `json:"changes"`
	// Kept lists owned chains that are not wanted but stay, emptied, because
	// a rule the tool does not own still jumps to them.
	Kept []string `json:"kept,omitempty"`
}

// Empty reports whether there is nothing to change.
func (cs *IPTablesChangeSet) Empty() bool { return len(cs.Changes) == 0 }

// Tables returns the tables that have changes, in order.
func (cs *IPTablesChangeSet) Tables() []ipt.TableName {
	var out []ipt.TableName
	for _, c := range cs.Changes {
		if !slices.Contains(out, c.Table) {
			out = append(out, c.Table)
		}
	}
	return out
}

// IPTables compares desired (a render) with live (a dump of the kernel's
// tables) and returns the changes that make the part of live that own
// names equal to desired. Chains and rules the mode does not own are never
// in the result.
func IPTables(desired, live *ipt.Ruleset, own *ipt.Ownership) *IPTablesChangeSet {
	cs := &IPTablesChangeSet{Family: desired.Family}
	for _, dt := range desired.Tables {
		lt := live.Table(dt.Name)
		if lt == nil {
			lt = &ipt.Table{Name: dt.Name}
		}
		diffTable(cs, dt, lt, own)
	}
	return cs
}

// sameRules reports whether a live chain holds the desired rules: in the
// same order, or for an unordered chain in any order as long as the rules
// that must come last (kube-proxy's NodePort jumps) still come last.
func sameRules(table ipt.TableName, desired, live *ipt.Chain, own *ipt.Ownership) bool {
	if slices.Equal(desired.Rules, live.Rules) {
		return true
	}
	if !own.IsUnordered(table, desired.Name) || len(desired.Rules) != len(live.Rules) {
		return false
	}
	wantBody, wantTail, ok := splitTail(desired.Rules, own)
	if !ok {
		return false
	}
	haveBody, haveTail, ok := splitTail(live.Rules, own)
	return ok && sameMultiset(wantBody, haveBody) && sameMultiset(wantTail, haveTail)
}

// splitTail splits rules into the body and the trailing must-be-last
// rules; ok is false when a must-be-last rule comes before a body rule.
func splitTail(rules []ipt.Rule, own *ipt.Ownership) (body, tail []ipt.Rule, ok bool) {
	for _, r := range rules {
		if own.MustBeLast(r) {
			tail = append(tail, r)
		} else if len(tail) > 0 {
			return nil, nil, false
		} else {
			body = append(body, r)
		}
	}
	return body, tail, true
}

func sameMultiset(a, b []ipt.Rule) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func diffTable(cs *IPTablesChangeSet, dt, lt *ipt.Table, own *ipt.Ownership) {
	// Sized for the chains the live table lacks (its built-in chains, up
	// to five, may be ones the desired table leaves out): in a first sync
	// every desired chain is created (330k at 30k Services), and growing
	// the list one append at a time copied it some five times. The size
	// is only a hint: appending past it is correct.
	creates := make([]IPTablesChange, 0, max(0, len(dt.Chains)-len(lt.Chains)+5))
	var inserts, removals []IPTablesChange
	for _, dc := range dt.Chains {
		lc := lt.Chain(dc.Name)
		switch {
		case ipt.IsBuiltin(dt.Name, dc.Name):
			ins, del := diffJumps(dt.Name, dc, lc, own)
			inserts, removals = append(inserts, ins...), append(removals, del...)
		case lc == nil:
			creates = append(creates, IPTablesChange{Verb: CreateChain, Table: dt.Name, Chain: dc.Name, Rules: dc.Rules})
		case own.IsShared(dc.Name) && len(dc.Rules) == 0:
			// kubelet's chain exists; its contents are not ours to manage.
		case !sameRules(dt.Name, dc, lc, own):
			c := IPTablesChange{Verb: ReplaceChain, Table: dt.Name, Chain: dc.Name, Rules: dc.Rules, Old: lc.Rules}
			if own.IsUnordered(dt.Name, dc.Name) {
				c.Edits, _ = unorderedEdits(dc.Rules, lc.Rules, own)
			}
			creates = append(creates, c)
		}
	}
	// Built-in chains that the desired state leaves out hold no wanted jumps.
	for _, lc := range lt.Chains {
		if ipt.IsBuiltin(lt.Name, lc.Name) && dt.Chain(lc.Name) == nil {
			_, del := diffJumps(dt.Name, &ipt.Chain{Name: lc.Name}, lc, own)
			removals = append(removals, del...)
		}
	}
	emptied, deletes := staleChains(cs, dt, lt, own)
	creates = append(creates, emptied...)
	byName := func(a, b IPTablesChange) int { return strings.Compare(a.Chain, b.Chain) }
	slices.SortFunc(creates, byName)
	slices.SortFunc(deletes, byName)
	cs.Changes = slices.Grow(cs.Changes, len(creates)+len(inserts)+len(removals)+len(deletes))
	cs.Changes = append(cs.Changes, creates...)
	// Inserted jumps go to position 1, so insert in reverse to end in order.
	slices.Reverse(inserts)
	cs.Changes = append(cs.Changes, inserts...)
	cs.Changes = append(cs.Changes, removals...)
	cs.Changes = append(cs.Changes, deletes...)
}

// staleChains handles the owned chains of lt that dt leaves out (never
// kubelet's shared ones): each is deleted, unless a rule the tool does
// not own still jumps to it; then it is kept, noted in cs.Kept, and
// emptied if it holds rules.
func staleChains(cs *IPTablesChangeSet, dt, lt *ipt.Table, own *ipt.Ownership) (emptied, deletes []IPTablesChange) {
	refs := foreignReferences(lt, own)
	for _, lc := range lt.Chains {
		if ipt.IsBuiltin(lt.Name, lc.Name) || dt.Chain(lc.Name) != nil || !own.Owns(lt.Name, lc.Name) || own.IsShared(lc.Name) {
			continue
		}
		if !refs[lc.Name] {
			deletes = append(deletes, IPTablesChange{Verb: DeleteChain, Table: lt.Name, Chain: lc.Name, Old: lc.Rules})
			continue
		}
		cs.Kept = append(cs.Kept, string(lt.Name)+"/"+lc.Name)
		if len(lc.Rules) > 0 {
			emptied = append(emptied, IPTablesChange{Verb: ReplaceChain, Table: lt.Name, Chain: lc.Name, Old: lc.Rules})
		}
	}
	return emptied, deletes
}

// diffJumps compares the wanted jump rules of a built-in chain with the
// live chain's owned jump rules (see ipt.Ownership.OwnsJump).
// Rules are compared as multisets: kube-proxy ensures jump rules exist
// rather than fixing their order.
func diffJumps(table ipt.TableName, want, live *ipt.Chain, own *ipt.Ownership) (inserts, deletes []IPTablesChange) {
	have := map[ipt.Rule]int{}
	if live != nil {
		for _, r := range live.Rules {
			if own.OwnsJump(table, r) {
				have[r]++
			}
		}
	}
	for _, r := range want.Rules {
		if have[r] > 0 {
			have[r]--
			continue
		}
		inserts = append(inserts, IPTablesChange{Verb: InsertJump, Table: table, Chain: want.Name, Rules: []ipt.Rule{r}})
	}
	if live == nil {
		return inserts, nil
	}
	for _, r := range live.Rules {
		if have[r] > 0 && !own.IsShared(r.Target()) {
			have[r]--
			deletes = append(deletes, IPTablesChange{Verb: DeleteJump, Table: table, Chain: live.Name, Rules: []ipt.Rule{r}})
		}
	}
	return inserts, deletes
}

// foreignReferences returns the chains that a rule the tool does not own
// jumps to: such chains cannot be deleted without breaking that rule.
func foreignReferences(t *ipt.Table, own *ipt.Ownership) map[string]bool {
	refs := map[string]bool{}
	for _, c := range t.Chains {
		if !ipt.IsBuiltin(t.Name, c.Name) && own.Owns(t.Name, c.Name) {
			continue
		}
		for _, r := range c.Rules {
			if ipt.IsBuiltin(t.Name, c.Name) {
				// Jump rules in built-in chains are owned; other rules there are not.
				if own.OwnsJump(t.Name, r) {
					continue
				}
			}
			if target := r.Target(); target != "" {
				refs[target] = true
			}
		}
	}
	return refs
}

// OwnedIPTables returns the part of a live ruleset that own names: the
// owned chains, and the built-in chains holding only the owned jump rules.
// Used as the desired state, it undoes changes made since live was read.
func OwnedIPTables(live *ipt.Ruleset, own *ipt.Ownership) *ipt.Ruleset {
	out := &ipt.Ruleset{Family: live.Family}
	for _, t := range live.Tables {
		ot := &ipt.Table{Name: t.Name}
		for _, c := range t.Chains {
			switch {
			case ipt.IsBuiltin(t.Name, c.Name):
				oc := &ipt.Chain{Name: c.Name, Policy: "-"}
				for _, r := range c.Rules {
					if own.OwnsJump(t.Name, r) {
						oc.Rules = append(oc.Rules, r)
					}
				}
				ot.Chains = append(ot.Chains, oc)
			case own.Owns(t.Name, c.Name):
				ot.Chains = append(ot.Chains, &ipt.Chain{Name: c.Name, Policy: "-", Rules: c.Rules})
			}
		}
		out.Tables = append(out.Tables, ot)
	}
	return out
}

// EmptyIPTables is the desired state of `reset`: the tool's tables with no
// chains and no jump rules, so that everything it owns is removed (except
// kubelet's shared KUBE-FIREWALL chain and the jumps to it).
func EmptyIPTables(family nodetable.Family) *ipt.Ruleset {
	return &ipt.Ruleset{Family: family, Tables: []*ipt.Table{{Name: ipt.Filter}, {Name: ipt.NAT}}}
}
