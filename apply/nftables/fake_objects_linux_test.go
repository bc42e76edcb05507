package nftables

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The fake's operations on sets and chains (see fake_replay_linux_test.go).

func (ft *fakeTransaction) addSet(s *nft.Set) unix.Errno {
	d := declarationOf(s)
	if old := ft.view.sets[s.Name]; old != nil {
		if !old.decl.Equal(d) {
			return unix.EEXIST
		}
	} else {
		ft.view.sets[s.Name] = &fakeSet{decl: d, elems: map[string]nft.Element{}}
		ft.step().Sets = append(ft.step().Sets, diff.NFTablesSetChange{Verb: diff.CreateSet, Set: d})
	}
	if len(s.Elements) == 0 {
		return 0
	}
	return ft.addElements(s.Name, s.Elements) // Batch.AddSet sends them
}

func (ft *fakeTransaction) deleteSet(name string) unix.Errno {
	s := ft.view.sets[name]
	switch {
	case s == nil:
		return unix.ENOENT
	case ft.view.setUse[name] > 0:
		return unix.EBUSY
	}
	for _, e := range s.elems {
		ft.view.use(verdictRefs(e.Value), -1)
	}
	delete(ft.view.sets, name)
	ft.step().Sets = append(ft.step().Sets, diff.NFTablesSetChange{Verb: diff.DeleteSet, Set: s.decl})
	return 0
}

func (ft *fakeTransaction) addElements(name string, elems []nft.Element) unix.Errno {
	s := ft.view.sets[name]
	if s == nil {
		return unix.ENOENT
	}
	var added []nft.Element
	for _, e := range elems {
		if old, ok := s.elems[e.Key]; ok {
			if old.Value != e.Value {
				return unix.EEXIST // as kernel 6.18 answers
			}
			continue // added again: no change
		}
		refs := verdictRefs(e.Value)
		if ft.view.missing(refs) {
			return unix.ENOENT
		}
		ft.view.use(refs, 1)
		s.elems[e.Key] = e
		added = append(added, e)
	}
	if len(added) > 0 {
		ft.step().Sets = append(ft.step().Sets, diff.NFTablesSetChange{Verb: diff.UpdateSet, Set: s.decl, Added: added})
	}
	return 0
}

// deleteElements deletes by key, as the batch sends only keys.
func (ft *fakeTransaction) deleteElements(name string, elems []nft.Element) unix.Errno {
	s := ft.view.sets[name]
	if s == nil {
		return unix.ENOENT
	}
	removed := make([]nft.Element, 0, len(elems))
	for _, e := range elems {
		old, ok := s.elems[e.Key]
		if !ok {
			return unix.ENOENT
		}
		ft.view.use(verdictRefs(old.Value), -1)
		delete(s.elems, e.Key)
		removed = append(removed, old)
	}
	if len(removed) > 0 {
		ft.step().Sets = append(ft.step().Sets, diff.NFTablesSetChange{Verb: diff.UpdateSet, Set: s.decl, Removed: removed})
	}
	return 0
}

func (ft *fakeTransaction) addChain(c *nft.Chain) unix.Errno {
	if old := ft.view.chains[c.Name]; old != nil {
		if !sameHook(old.base, c.Base) {
			return unix.EEXIST
		}
		return 0
	}
	ft.view.chains[c.Name] = &fakeChain{base: c.Base, comment: c.Comment, own: true}
	ft.step().Chains = append(ft.step().Chains, diff.NFTablesChainChange{Verb: diff.CreateChain, Name: c.Name, Base: c.Base, Comment: c.Comment})
	return 0
}

// sameHook reports whether adding a chain declared b where one declared a
// exists is the kernel's no-op: both regular, or the same hook.
func sameHook(a, b *nft.BaseChain) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Type == b.Type && a.Hook == b.Hook && a.Priority == b.Priority
}

func (ft *fakeTransaction) flushChain(name string) unix.Errno {
	c := ft.view.chains[name]
	if c == nil {
		return unix.ENOENT
	}
	for _, r := range c.rules {
		ft.view.use(ruleRefs(r), -1)
	}
	c.rules, c.own = nil, true
	ft.step().Chains = append(ft.step().Chains, diff.NFTablesChainChange{Verb: diff.ReplaceChain, Name: name, Base: c.base, Comment: c.comment})
	return 0
}

func (ft *fakeTransaction) deleteChain(name string) unix.Errno {
	c := ft.view.chains[name]
	switch {
	case c == nil:
		return unix.ENOENT
	case ft.view.chainUse[name] > 0:
		return unix.EBUSY
	}
	for _, r := range c.rules {
		ft.view.use(ruleRefs(r), -1)
	}
	delete(ft.view.chains, name)
	ft.step().Chains = append(ft.step().Chains, diff.NFTablesChainChange{Verb: diff.DeleteChain, Name: name, Base: c.base, Comment: c.comment})
	return 0
}

// addRule appends r to the chain; consecutive rules of one chain extend
// one change.
func (ft *fakeTransaction) addRule(name string, r nft.Rule) unix.Errno {
	c := ft.view.chains[name]
	if c == nil {
		return unix.ENOENT
	}
	refs := ruleRefs(r)
	if ft.view.missing(refs) {
		return unix.ENOENT
	}
	ft.view.use(refs, 1)
	if !c.own {
		c.rules, c.own = slices.Clip(c.rules), true // the next append copies
	}
	c.rules = append(c.rules, r)
	chains := ft.step().Chains
	if n := len(chains); n > 0 && chains[n-1].Name == name && chains[n-1].Verb != diff.DeleteChain {
		chains[n-1].Rules = c.rules
		return 0
	}
	ft.step().Chains = append(chains, diff.NFTablesChainChange{Verb: diff.ReplaceChain, Name: name, Base: c.base, Comment: c.comment, Rules: c.rules})
	return 0
}
