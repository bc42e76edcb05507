// Package diff compares a desired ruleset with the live one read from the
// kernel, both of the same type, and produces an ordered change set: the
// only changes that apply needs to make, and what plan shows.
package diff

import (
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
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

// ForTable returns the changes of one table, in order.
func (cs *IPTablesChangeSet) ForTable(t ipt.TableName) []IPTablesChange {
	var out []IPTablesChange
	for _, c := range cs.Changes {
		if c.Table == t {
			out = append(out, c)
		}
	}
	return out
}

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

// Owner reports whether a user-defined chain of an iptables table belongs
// to the mode in use. Each mode owns only its own chains (see
// render.OwnsIPTablesChain, render.OwnsIPVSChain and
// render.OwnsUserspaceChain), so applying one mode never removes what
// another mode, or anyone else, wrote.
type Owner func(table ipt.TableName, chain string) bool

// IPTables compares desired (an iptables-mode render) with live (a dump of
// the kernel's tables) and returns the changes that make the owned part of
// live equal to desired. Chains and rules the tool does not own are never in
// the result.
func IPTables(desired, live *ipt.Ruleset) *IPTablesChangeSet {
	return IPTablesWith(desired, live, IPTablesOptions{Owns: render.OwnsIPTablesChain, Unordered: render.IsIPTablesDispatchChain})
}

// IPTablesOwned is IPTables for the chains that owns says are the mode's,
// with every chain's rule order significant.
func IPTablesOwned(desired, live *ipt.Ruleset, owns Owner) *IPTablesChangeSet {
	return IPTablesWith(desired, live, IPTablesOptions{Owns: owns})
}

// IPTablesOptions are a mode's rules for comparing iptables chains.
type IPTablesOptions struct {
	// Owns says which chains are the mode's.
	Owns Owner
	// Unordered, if set, names the chains whose rule order, apart from
	// the last rule, has no meaning (render.IsIPTablesDispatchChain):
	// such a chain is unchanged when it holds the same rules in another
	// order.
	Unordered func(table ipt.TableName, chain string) bool
}

// IPTablesWith is IPTables with a mode's comparison options.
func IPTablesWith(desired, live *ipt.Ruleset, opts IPTablesOptions) *IPTablesChangeSet {
	cs := &IPTablesChangeSet{Family: desired.Family}
	for _, dt := range desired.Tables {
		lt := live.Table(dt.Name)
		if lt == nil {
			lt = &ipt.Table{Name: dt.Name}
		}
		diffTable(cs, dt, lt, opts)
	}
	return cs
}

// sameRules reports whether a live chain holds the desired rules: in the
// same order, or for an unordered chain in any order as long as the rules
// that must come last (kube-proxy's NodePort jumps) still come last.
func sameRules(table ipt.TableName, desired, live *ipt.Chain, opts IPTablesOptions) bool {
	if slices.Equal(desired.Rules, live.Rules) {
		return true
	}
	if opts.Unordered == nil || !opts.Unordered(table, desired.Name) || len(desired.Rules) != len(live.Rules) {
		return false
	}
	wantBody, wantTail, ok := splitTail(desired.Rules)
	if !ok {
		return false
	}
	haveBody, haveTail, ok := splitTail(live.Rules)
	return ok && sameMultiset(wantBody, haveBody) && sameMultiset(wantTail, haveTail)
}

// mustBeLast marks kube-proxy's rules that have to end their chain.
const mustBeLast = "NOTE: this must be the last rule in this chain"

// splitTail splits rules into the body and the trailing must-be-last
// rules; ok is false when a must-be-last rule comes before a body rule.
func splitTail(rules []ipt.Rule) (body, tail []ipt.Rule, ok bool) {
	for _, r := range rules {
		if strings.Contains(string(r), mustBeLast) {
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

func diffTable(cs *IPTablesChangeSet, dt, lt *ipt.Table, opts IPTablesOptions) {
	owns := opts.Owns
	var creates, deletes []IPTablesChange
	var inserts, removals []IPTablesChange
	for _, dc := range dt.Chains {
		lc := lt.Chain(dc.Name)
		switch {
		case ipt.IsBuiltin(dt.Name, dc.Name):
			ins, del := diffJumps(dt.Name, dc, lc, owns)
			inserts, removals = append(inserts, ins...), append(removals, del...)
		case lc == nil:
			creates = append(creates, IPTablesChange{Verb: CreateChain, Table: dt.Name, Chain: dc.Name, Rules: dc.Rules})
		case render.IsSharedIPTablesChain(dc.Name) && len(dc.Rules) == 0:
			// kubelet's chain exists; its contents are not ours to manage.
		case !sameRules(dt.Name, dc, lc, opts):
			creates = append(creates, IPTablesChange{Verb: ReplaceChain, Table: dt.Name, Chain: dc.Name, Rules: dc.Rules, Old: lc.Rules})
		}
	}
	// Built-in chains that the desired state leaves out hold no wanted jumps.
	for _, lc := range lt.Chains {
		if ipt.IsBuiltin(lt.Name, lc.Name) && dt.Chain(lc.Name) == nil {
			_, del := diffJumps(dt.Name, &ipt.Chain{Name: lc.Name}, lc, owns)
			removals = append(removals, del...)
		}
	}
	refs := foreignReferences(lt, owns)
	for _, lc := range lt.Chains {
		if ipt.IsBuiltin(lt.Name, lc.Name) || dt.Chain(lc.Name) != nil || !owns(lt.Name, lc.Name) {
			continue
		}
		if render.IsSharedIPTablesChain(lc.Name) {
			continue // kubelet's chain: never deleted
		}
		if refs[lc.Name] {
			// A foreign rule jumps here: keep the chain, but empty it.
			cs.Kept = append(cs.Kept, string(lt.Name)+"/"+lc.Name)
			if len(lc.Rules) > 0 {
				creates = append(creates, IPTablesChange{Verb: ReplaceChain, Table: lt.Name, Chain: lc.Name, Old: lc.Rules})
			}
			continue
		}
		deletes = append(deletes, IPTablesChange{Verb: DeleteChain, Table: lt.Name, Chain: lc.Name, Old: lc.Rules})
	}
	byName := func(a, b IPTablesChange) int { return strings.Compare(a.Chain, b.Chain) }
	slices.SortFunc(creates, byName)
	slices.SortFunc(deletes, byName)
	cs.Changes = append(cs.Changes, creates...)
	// Inserted jumps go to position 1, so insert in reverse to end in order.
	slices.Reverse(inserts)
	cs.Changes = append(cs.Changes, inserts...)
	cs.Changes = append(cs.Changes, removals...)
	cs.Changes = append(cs.Changes, deletes...)
}

// diffJumps compares the wanted jump rules of a built-in chain with the
// live chain's owned jump rules (see isOwnedJump).
// Rules are compared as multisets: kube-proxy ensures jump rules exist
// rather than fixing their order.
func diffJumps(table ipt.TableName, want, live *ipt.Chain, owns Owner) (inserts, deletes []IPTablesChange) {
	have := map[ipt.Rule]int{}
	if live != nil {
		for _, r := range live.Rules {
			if isOwnedJump(table, r, owns) {
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
		if have[r] > 0 && !render.IsSharedIPTablesChain(r.Target()) {
			have[r]--
			deletes = append(deletes, IPTablesChange{Verb: DeleteJump, Table: table, Chain: live.Name, Rules: []ipt.Rule{r}})
		}
	}
	return inserts, deletes
}

// foreignReferences returns the chains that a rule the tool does not own
// jumps to: such chains cannot be deleted without breaking that rule.
func foreignReferences(t *ipt.Table, owns Owner) map[string]bool {
	refs := map[string]bool{}
	for _, c := range t.Chains {
		if !ipt.IsBuiltin(t.Name, c.Name) && owns(t.Name, c.Name) {
			continue
		}
		for _, r := range c.Rules {
			if ipt.IsBuiltin(t.Name, c.Name) {
				// Jump rules in built-in chains are owned; other rules there are not.
				if isOwnedJump(t.Name, r, owns) {
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

// isOwnedJump reports whether a rule in a built-in chain is one of the
// tool's jump rules.
func isOwnedJump(table ipt.TableName, r ipt.Rule, owns Owner) bool {
	return owns(table, r.Target()) && looksLikeOwnedJump(r)
}

// looksLikeOwnedJump reports whether a built-in chain's rule into an owned
// chain is one the tool manages (and may delete), rather than a user's own
// rule that happens to target a KUBE- chain. Every owned jump is a bare
// jump with at most a conntrack state match, a local-destination match
// (the userspace mode's NodePort jumps) and a comment.
func looksLikeOwnedJump(r ipt.Rule) bool {
	f := r.Fields()
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "-m":
			if i+1 < len(f) && f[i+1] != "conntrack" && f[i+1] != "comment" && f[i+1] != "addrtype" {
				return false
			}
			i++
		case "--ctstate", "--comment", "--dst-type", "-j":
			i++
		default:
			return false
		}
	}
	return true
}

// OwnedIPTables returns the part of a live ruleset that the iptables mode
// owns: its chains, and the built-in chains holding only its jump rules.
// Used as the desired state, it undoes changes made since live was read.
func OwnedIPTables(live *ipt.Ruleset) *ipt.Ruleset {
	return OwnedIPTablesBy(live, render.OwnsIPTablesChain)
}

// OwnedIPTablesBy is OwnedIPTables for the chains owns says are the mode's.
func OwnedIPTablesBy(live *ipt.Ruleset, owns Owner) *ipt.Ruleset {
	out := &ipt.Ruleset{Family: live.Family}
	for _, t := range live.Tables {
		ot := &ipt.Table{Name: t.Name}
		for _, c := range t.Chains {
			switch {
			case ipt.IsBuiltin(t.Name, c.Name):
				oc := &ipt.Chain{Name: c.Name, Policy: "-"}
				for _, r := range c.Rules {
					if isOwnedJump(t.Name, r, owns) {
						oc.Rules = append(oc.Rules, r)
					}
				}
				ot.Chains = append(ot.Chains, oc)
			case owns(t.Name, c.Name):
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
