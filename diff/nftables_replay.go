package diff

import (
	"slices"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// ReplayNFTables returns what the kernel holds once cs is applied to live
// (nil: no table): sets and chains are created, changed and deleted as
// cs says, new ones after the existing ones, and the elements of changed
// sets sorted. It returns nil when cs deletes the table. A rebuilt table
// loses the elements of its dynamic sets, as the kernel does. live is not
// modified; the result shares what did not change with it (element and
// rule slices), so neither may be modified afterwards.
func ReplayNFTables(live *nft.Ruleset, cs *NFTablesChangeSet) *nft.Ruleset {
	if cs.Table == DeleteTable {
		return nil
	}
	out := &nft.Ruleset{Family: cs.Family, Table: cs.Name}
	if live != nil {
		out.Family, out.Table, out.Comment = live.Family, live.Table, live.Comment
		for _, s := range live.Sets {
			c := *s
			if cs.Table == RecreateTable && IsDynamic(s) {
				c.Elements = nil
			}
			out.Sets = append(out.Sets, &c)
		}
		for _, c := range live.Chains {
			cc := *c
			out.Chains = append(out.Chains, &cc)
		}
	}
	if cs.Table == CreateTable || cs.Table == RecreateTable {
		out.Comment = cs.Comment
	}
	sets := make(map[string]*nft.Set, len(out.Sets))
	for _, s := range out.Sets {
		sets[s.Name] = s
	}
	for _, c := range cs.Sets {
		replaySet(out, sets, c)
	}
	chains := make(map[string]*nft.Chain, len(out.Chains))
	for _, c := range out.Chains {
		chains[c.Name] = c
	}
	for _, c := range cs.Chains {
		replayChain(out, chains, c)
	}
	out.Sets = slices.DeleteFunc(out.Sets, func(s *nft.Set) bool { return sets[s.Name] != s })
	out.Chains = slices.DeleteFunc(out.Chains, func(c *nft.Chain) bool { return chains[c.Name] != c })
	return out
}

// replaySet applies one set change; a deleted set leaves sets (the index
// of rs.Sets by name), and is dropped from rs.Sets at the end.
func replaySet(rs *nft.Ruleset, sets map[string]*nft.Set, c NFTablesSetChange) {
	if c.Verb == DeleteSet {
		delete(sets, c.Set.Name)
		return
	}
	s := sets[c.Set.Name]
	if s == nil {
		s = &nft.Set{}
		sets[c.Set.Name] = s
		rs.Sets = append(rs.Sets, s)
	}
	elems := s.Elements
	if len(c.Removed)+len(c.Added) > 0 {
		gone := make(map[nft.Element]bool, len(c.Removed))
		for _, e := range c.Removed {
			gone[e] = true
		}
		elems = slices.DeleteFunc(slices.Clone(elems), func(e nft.Element) bool { return gone[e] })
		elems = append(elems, c.Added...)
	}
	*s = *declaration(c.Set)
	s.Elements = elems
	if len(c.Added) > 0 {
		s.SortElements()
	}
}

// replayChain applies one chain change, as replaySet does for sets.
func replayChain(rs *nft.Ruleset, chains map[string]*nft.Chain, c NFTablesChainChange) {
	if c.Verb == DeleteChain {
		delete(chains, c.Name)
		return
	}
	ch := chains[c.Name]
	if ch == nil {
		ch = &nft.Chain{Name: c.Name}
		chains[c.Name] = ch
		rs.Chains = append(rs.Chains, ch)
	}
	ch.Base, ch.Comment, ch.Rules = c.Base, c.Comment, c.Rules
}

// AppliedNFTables is ReplayNFTables for a change set that NFTables made
// from desired and live: the same table (in desired's order), built from
// desired's own sets and chains rather than from live's. Everything the
// diff compares is equal in the two; the packet path's elements of a
// dynamic set are live's, unless the set or the table is made anew. A
// client that keeps this as the table's state compares the next render,
// which shares the sets, chains and strings of unchanged Services with
// this one, mostly by pointer. The result shares desired's sets and
// chains, so neither may be modified afterwards.
func AppliedNFTables(desired, live *nft.Ruleset, cs *NFTablesChangeSet) *nft.Ruleset {
	if cs.Table == DeleteTable {
		return nil
	}
	out := &nft.Ruleset{Family: desired.Family, Table: desired.Table, Comment: desired.Comment}
	out.Chains = slices.Clip(desired.Chains)
	out.Sets = make([]*nft.Set, len(desired.Sets))
	kept := packetPathElements(live, cs)
	for i, s := range desired.Sets {
		if IsDynamic(s) {
			c := *s
			c.Elements = kept[s.Name]
			s = &c
		}
		out.Sets[i] = s
	}
	return out
}

// packetPathElements returns, by set name, the elements that the packet
// path put in live's dynamic sets and that outlive cs: none when cs makes
// the table anew.
func packetPathElements(live *nft.Ruleset, cs *NFTablesChangeSet) map[string][]nft.Element {
	if live == nil || cs.Table == CreateTable || cs.Table == RecreateTable {
		return nil
	}
	var out map[string][]nft.Element
	for _, s := range live.Sets {
		if IsDynamic(s) && len(s.Elements) > 0 {
			if out == nil {
				out = map[string][]nft.Element{}
			}
			out[s.Name] = s.Elements
		}
	}
	return out
}
