package nftables

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The fake's transactions. Each operation is checked against a view of the
// table as the operations before it left it, with the errnos nf_tables
// gives: ENOENT for a missing table, set, element or chain (a rule's or an
// element's jump and goto target, a rule's @set included), EBUSY for a
// chain or set still referred to, EEXIST for an element that exists with
// another value and for a set or base chain declared again differently. The
// kernel deletes a chain's own rules with it, and keeps the comment of a
// table, set or chain added again. Every operation that changes something
// becomes one change of a diff.NFTablesChangeSet, in order, and the change
// sets (a new one after each table deletion) are replayed onto the table
// with diff.ReplayNFTables. The first refused operation refuses the
// transaction (the kernel names every one).

// fakeView is one table as a transaction's operations see it.
type fakeView struct {
	present bool
	sets    map[string]*fakeSet
	chains  map[string]*fakeChain
	// chainUse and setUse count the jumps and gotos to a chain (from
	// rules and map elements) and the rules that name a set: the kernel's
	// use counts, which forbid deleting what is in use.
	chainUse map[string]int
	setUse   map[string]int
}

type fakeSet struct {
	decl  *nft.Set
	elems map[string]nft.Element // by key
}

type fakeChain struct {
	base    *nft.BaseChain
	comment string
	rules   []nft.Rule
	own     bool // rules is this transaction's slice, free to append to
}

// fakeTransaction runs one transaction's operations.
type fakeTransaction struct {
	family nft.Family
	table  string
	view   fakeView
	steps  []*diff.NFTablesChangeSet
}

// replayTransaction returns what tx makes of live (nil: no table), or the
// kernel's refusal. live is not modified.
func replayTransaction(live *nft.Ruleset, tx transaction) (*nft.Ruleset, error) {
	ft := &fakeTransaction{family: tx.family, table: tx.table, view: viewOf(live)}
	ft.steps = []*diff.NFTablesChangeSet{{Family: tx.family, Name: tx.table}}
	for _, o := range tx.ops {
		if errno := ft.run(o); errno != 0 {
			one := transaction{family: tx.family, table: tx.table, ops: []op{o}}
			what, _, _ := strings.Cut(txScript(one), "\n")
			return nil, refusal(tx, what, errno)
		}
	}
	rs := live
	for _, cs := range ft.steps {
		if rs == nil && cs.Table == "" {
			continue // nothing happened before the table was added
		}
		rs = diff.ReplayNFTables(rs, cs)
	}
	return rs, nil
}

func viewOf(live *nft.Ruleset) fakeView {
	v := emptyView(live != nil)
	if live == nil {
		return v
	}
	for _, s := range live.Sets {
		fs := &fakeSet{decl: declarationOf(s), elems: make(map[string]nft.Element, len(s.Elements))}
		for _, e := range s.Elements {
			fs.elems[e.Key] = e
			v.use(verdictRefs(e.Value), 1)
		}
		v.sets[s.Name] = fs
	}
	for _, c := range live.Chains {
		v.chains[c.Name] = &fakeChain{base: c.Base, comment: c.Comment, rules: c.Rules}
		for _, r := range c.Rules {
			v.use(ruleRefs(r), 1)
		}
	}
	return v
}

func emptyView(present bool) fakeView {
	return fakeView{present: present, sets: map[string]*fakeSet{}, chains: map[string]*fakeChain{},
		chainUse: map[string]int{}, setUse: map[string]int{}}
}

// fakeRefs are the chains and sets one rule or element refers to.
type fakeRefs struct{ chains, sets []string }

// use adds n to the use counts of refs.
func (v *fakeView) use(refs fakeRefs, n int) {
	for _, c := range refs.chains {
		v.chainUse[c] += n
	}
	for _, s := range refs.sets {
		v.setUse[s] += n
	}
}

// missing reports whether refs names a chain or set the view lacks.
func (v *fakeView) missing(refs fakeRefs) bool {
	for _, c := range refs.chains {
		if v.chains[c] == nil {
			return true
		}
	}
	for _, s := range refs.sets {
		if v.sets[s] == nil {
			return true
		}
	}
	return false
}

// ruleRefs reads a rule's jump and goto targets (in anonymous verdict maps
// too) and the sets it names with @, outside quoted strings.
func ruleRefs(r nft.Rule) fakeRefs {
	var refs fakeRefs
	words := strings.FieldsFunc(unquoted(string(r)), func(c rune) bool { return strings.ContainsRune(" \t,{};", c) })
	for i, w := range words {
		switch {
		case strings.HasPrefix(w, "@"):
			refs.sets = append(refs.sets, w[1:])
		case (w == "jump" || w == "goto") && i+1 < len(words):
			refs.chains = append(refs.chains, words[i+1])
		}
	}
	return refs
}

// verdictRefs reads a map element's value: "jump X" or "goto X" refers to X.
func verdictRefs(value string) fakeRefs {
	if f := strings.Fields(value); len(f) == 2 && (f[0] == "jump" || f[0] == "goto") {
		return fakeRefs{chains: f[1:]}
	}
	return fakeRefs{}
}

// unquoted is s without its "quoted strings" (comments).
func unquoted(s string) string {
	var b strings.Builder
	for i, part := range strings.Split(s, `"`) {
		if i%2 == 0 {
			b.WriteString(part)
		}
	}
	return b.String()
}

func declarationOf(s *nft.Set) *nft.Set {
	d := *s
	d.Elements = nil
	return &d
}

// step is the change set the next operation adds to.
func (ft *fakeTransaction) step() *diff.NFTablesChangeSet { return ft.steps[len(ft.steps)-1] }

// run checks and records one operation; it returns the kernel's errno for
// a refused one, 0 otherwise.
func (ft *fakeTransaction) run(o op) unix.Errno {
	switch o.kind {
	case opAddTable:
		return ft.addTable(o.comment)
	case opDeleteTable:
		return ft.deleteTable()
	}
	if !ft.view.present {
		return unix.ENOENT
	}
	switch o.kind {
	case opAddSet:
		return ft.addSet(o.set)
	case opDeleteSet:
		return ft.deleteSet(o.name)
	case opAddElements:
		return ft.addElements(o.name, o.elems)
	case opDeleteElements:
		return ft.deleteElements(o.name, o.elems)
	case opAddChain:
		return ft.addChain(o.chain)
	case opFlushChain:
		return ft.flushChain(o.name)
	case opDeleteChain:
		return ft.deleteChain(o.name)
	case opAddRule:
		return ft.addRule(o.name, o.rule)
	}
	return unix.EINVAL
}

func (ft *fakeTransaction) addTable(comment string) unix.Errno {
	if ft.view.present {
		return 0
	}
	ft.view = emptyView(true)
	ft.steps = append(ft.steps, &diff.NFTablesChangeSet{Family: ft.family, Name: ft.table, Table: diff.CreateTable, Comment: comment})
	return 0
}

func (ft *fakeTransaction) deleteTable() unix.Errno {
	if !ft.view.present {
		return unix.ENOENT
	}
	ft.view = emptyView(false)
	ft.steps = append(ft.steps, &diff.NFTablesChangeSet{Family: ft.family, Name: ft.table, Table: diff.DeleteTable})
	return 0
}
