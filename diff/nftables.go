package diff

import (
	"slices"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The verbs of nftables changes that iptables has no word for. Chains use
// CreateChain, ReplaceChain and DeleteChain.
const (
	CreateSet   Verb = "create-set"   // a missing set or map, with its elements
	UpdateSet   Verb = "update-set"   // an existing set whose elements differ
	ReplaceSet  Verb = "replace-set"  // a set whose declaration differs (rebuilds the table)
	DeleteSet   Verb = "delete-set"   // a set the table no longer wants
	CreateTable Verb = "create-table" // the table is absent
	// RecreateTable: the table is deleted and written anew in the same
	// transaction, because a declaration the kernel cannot change in place
	// differs (see NFTablesChangeSet.Reasons).
	RecreateTable Verb = "recreate-table"
	DeleteTable   Verb = "delete-table" // reset: the whole table goes
)

// NFTablesSetChange is one change to one set or map.
type NFTablesSetChange struct {
	Verb Verb `json:"verb"`
	// Set is the declaration the set ends with (create, update, replace), or
	// the live one (delete); its Elements are always nil.
	Set *nft.Set `json:"set"`
	// Old is the live declaration that Set replaces (replace only).
	Old *nft.Set `json:"old,omitempty"`
	// Added and Removed are the elements that come and go, in the package's
	// element order. An element whose value or comment changes is removed
	// and added again. The elements of a dynamic set (affinity), which the
	// packet path fills, are never compared, added or removed.
	Added   []nft.Element `json:"added,omitempty"`
	Removed []nft.Element `json:"removed,omitempty"`
}

// NFTablesChainChange is one change to one chain.
type NFTablesChainChange struct {
	Verb Verb   `json:"verb"`
	Name string `json:"name"`
	// Base and Comment are the chain's declaration: the desired one
	// (create, replace), or the live one (delete).
	Base    *nft.BaseChain `json:"base,omitempty"`
	Comment string         `json:"comment,omitempty"`
	// Rules are the chain's new rules (create, replace).
	Rules []nft.Rule `json:"rules,omitempty"`
	// Old are the chain's live rules (replace, delete).
	Old []nft.Rule `json:"old,omitempty"`
	// Redeclared is set when the live declaration differs from the desired
	// one (replace only; the table is then rebuilt), and OldBase and
	// OldComment are then the live declaration.
	Redeclared bool           `json:"redeclared,omitempty"`
	OldBase    *nft.BaseChain `json:"oldBase,omitempty"`
	OldComment string         `json:"oldComment,omitempty"`
}

// DeclarationChanged reports whether the chain's hook, type, priority,
// policy or comment changes, which the kernel cannot do in place. A
// changed rule of a base chain is not such a change.
func (c NFTablesChainChange) DeclarationChanged() bool {
	return c.Verb == ReplaceChain && c.Redeclared
}

// NFTablesChangeSet is every change to one nftables table. It states the
// net difference: what each set and chain gains and loses. How apply turns
// it into transactions (and in which order) is apply/nftables' business.
//
// When Table is RecreateTable, the listed changes are still the net
// difference, for the plan; apply rebuilds the whole table from the
// desired ruleset in one transaction instead of running them.
type NFTablesChangeSet struct {
	Family nft.Family `json:"family"`
	Name   string     `json:"table"`
	// Table is CreateTable, RecreateTable, DeleteTable, or empty when the
	// table stays and only its sets and chains change.
	Table Verb `json:"tableChange,omitempty"`
	// Comment is the desired table comment (create, recreate).
	Comment string `json:"comment,omitempty"`
	// Reasons say why the table is recreated.
	Reasons []string `json:"reasons,omitempty"`
	// Sets are the set changes: creates, updates and replaces in desired
	// order, then deletes in live order.
	Sets []NFTablesSetChange `json:"sets,omitempty"`
	// Chains are the chain changes: creates and replaces in desired order,
	// then deletes in live order.
	Chains []NFTablesChainChange `json:"chains,omitempty"`
}

// Empty reports whether there is nothing to change.
func (cs *NFTablesChangeSet) Empty() bool {
	return cs.Table == "" && len(cs.Sets) == 0 && len(cs.Chains) == 0
}

// NFTables compares desired (a render) with live (the same table read from
// the kernel; nil when the kernel has no such table) and returns the
// changes that make live equal to desired. Everything inside the table is
// owned: sets and chains that desired lacks are deleted. Element and chain
// order do not count: nft keeps no meaningful order among sets, chains or
// the elements of a set. Rules are compared as the exact text nft lists.
func NFTables(desired, live *nft.Ruleset) *NFTablesChangeSet {
	cs := &NFTablesChangeSet{Family: desired.Family, Name: desired.Table, Comment: desired.Comment}
	if live == nil {
		cs.Table = CreateTable
		live = &nft.Ruleset{Family: desired.Family, Table: desired.Table}
	} else if live.Comment != desired.Comment {
		cs.Reasons = append(cs.Reasons, "the table comment changes")
	}
	diffNFTSets(cs, desired, live)
	diffNFTChains(cs, desired, live)
	if len(cs.Reasons) > 0 {
		cs.Table = RecreateTable
	} else if cs.Table == "" {
		cs.Comment = ""
	}
	return cs
}

// DeleteNFTables is the change set of `reset`: the whole table goes. The
// set and chain deletions are listed for the plan; apply deletes the table
// in one operation. A nil live (no such table) gives an empty change set.
func DeleteNFTables(live *nft.Ruleset) *NFTablesChangeSet {
	if live == nil {
		return &NFTablesChangeSet{}
	}
	cs := NFTables(&nft.Ruleset{Family: live.Family, Table: live.Table, Comment: live.Comment}, live)
	cs.Table = DeleteTable
	return cs
}

func diffNFTSets(cs *NFTablesChangeSet, desired, live *nft.Ruleset) {
	gone := pairByName(desired.Sets, live.Sets, setName, func(ds, ls *nft.Set) {
		switch {
		case ls == nil:
			cs.Sets = append(cs.Sets, NFTablesSetChange{Verb: CreateSet, Set: declaration(ds), Added: ownedElements(ds)})
		case !sameDeclaration(ds, ls):
			added, removed := diffElements(ds, ls)
			cs.Sets = append(cs.Sets, NFTablesSetChange{Verb: ReplaceSet, Set: declaration(ds), Old: declaration(ls), Added: added, Removed: removed})
			cs.Reasons = append(cs.Reasons, "the declaration of "+kind(ds)+" "+ds.Name+" changes")
		default:
			if added, removed := diffElements(ds, ls); len(added)+len(removed) > 0 {
				cs.Sets = append(cs.Sets, NFTablesSetChange{Verb: UpdateSet, Set: declaration(ds), Added: added, Removed: removed})
			}
		}
	})
	for _, ls := range gone {
		cs.Sets = append(cs.Sets, NFTablesSetChange{Verb: DeleteSet, Set: declaration(ls), Removed: sortedElements(ownedElements(ls))})
	}
}

func diffNFTChains(cs *NFTablesChangeSet, desired, live *nft.Ruleset) {
	if len(live.Chains) == 0 {
		cs.Chains = make([]NFTablesChainChange, 0, len(desired.Chains))
	}
	gone := pairByName(desired.Chains, live.Chains, chainName, func(dc, lc *nft.Chain) {
		switch {
		case lc == nil:
			cs.Chains = append(cs.Chains, NFTablesChainChange{Verb: CreateChain, Name: dc.Name, Base: dc.Base, Comment: dc.Comment, Rules: dc.Rules})
		case !dc.Equal(lc):
			cs.Chains = append(cs.Chains, replaceChain(cs, dc, lc))
		}
	})
	for _, lc := range gone {
		cs.Chains = append(cs.Chains, NFTablesChainChange{Verb: DeleteChain, Name: lc.Name, Base: lc.Base, Comment: lc.Comment, Old: lc.Rules})
	}
}

// replaceChain is the change of live chain lc into dc, noting in cs a
// change of its declaration.
func replaceChain(cs *NFTablesChangeSet, dc, lc *nft.Chain) NFTablesChainChange {
	ch := NFTablesChainChange{Verb: ReplaceChain, Name: dc.Name, Base: dc.Base, Comment: dc.Comment, Rules: dc.Rules, Old: lc.Rules}
	if !sameBase(dc.Base, lc.Base) || dc.Comment != lc.Comment {
		ch.Redeclared, ch.OldBase, ch.OldComment = true, lc.Base, lc.Comment
		cs.Reasons = append(cs.Reasons, "the declaration of chain "+dc.Name+" changes")
	}
	return ch
}

// declaration returns s without its elements.
func declaration(s *nft.Set) *nft.Set {
	d := *s
	d.Elements = nil
	return &d
}

// sameDeclaration reports whether two sets are declared alike: everything
// but the elements.
func sameDeclaration(a, b *nft.Set) bool {
	return declaration(a).Equal(declaration(b))
}

func sameBase(a, b *nft.BaseChain) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func kind(s *nft.Set) string {
	if s.IsMap() {
		return "map"
	}
	return "set"
}

// IsDynamic reports whether the packet path fills s (`update @set`), so
// that its elements are not the tool's to manage: kube-proxy's affinity
// sets.
func IsDynamic(s *nft.Set) bool {
	return slices.Contains(s.Flags, nft.FlagDynamic)
}

// ownedElements returns the elements of s the tool manages: none of a
// dynamic set's.
func ownedElements(s *nft.Set) []nft.Element {
	if IsDynamic(s) {
		return nil
	}
	return s.Elements
}

// diffElements returns the elements of desired that live lacks and those
// of live that desired lacks, matching whole elements (key, value and
// comment), so that a changed value is one removal and one addition.
func diffElements(desired, live *nft.Set) (added, removed []nft.Element) {
	want, have := ownedElements(desired), ownedElements(live)
	if len(want) == len(have) && (len(want) == 0 || &want[0] == &have[0]) {
		return nil, nil // the render's own elements, kept as the state
	}
	if slices.Equal(want, have) {
		return nil, nil // the usual case, found in one pass
	}
	byKey := make(map[string]int, len(have))
	for i, e := range have {
		byKey[e.Key] = i
	}
	kept := make([]bool, len(have))
	for _, e := range want {
		if i, ok := byKey[e.Key]; ok && have[i] == e {
			kept[i] = true
			continue
		}
		added = append(added, e)
	}
	for i, e := range have {
		if !kept[i] {
			removed = append(removed, e)
		}
	}
	return sortedElements(added), sortedElements(removed)
}

// sortedElements returns elems in the package's element order (the
// kernel lists a hash set in hash order), as a new slice.
func sortedElements(elems []nft.Element) []nft.Element {
	if len(elems) == 0 {
		return nil
	}
	s := &nft.Set{Elements: slices.Clone(elems)}
	s.SortElements()
	return s.Elements
}
