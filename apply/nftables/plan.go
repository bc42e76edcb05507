package nftables

import (
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// opKind is one kind of batch operation.
type opKind int

const (
	opAddTable opKind = iota
	opDeleteTable
	opAddSet
	opDeleteSet
	opAddElements
	opDeleteElements
	opAddChain
	opFlushChain
	opDeleteChain
	opAddRule
)

// op is one operation of a transaction, as the netlink batch and the
// dry-run script both spell it; one list feeds both, so --dry-run prints
// exactly what apply sends.
type op struct {
	kind    opKind
	comment string // the table's (add table)
	set     *nft.Set
	chain   *nft.Chain // declaration only: Rules are in their own ops
	name    string     // of the set or chain (delete, flush, elements, rule)
	elems   []nft.Element
	rule    nft.Rule
}

// transaction is one atomic batch on one table.
type transaction struct {
	family nft.Family
	table  string
	// declare lists the sets that already exist in the kernel, which the
	// batch needs to encode elements and set references.
	declare []*nft.Set
	ops     []op
}

// transactions turns a plan into its atomic batches, in the order apply
// runs them; a plan with no changes has none.
//
// The main transaction follows kube-proxy's safe order: the table, new
// sets and new chains first, so that every rule and element that refers to
// them finds them; then stale elements go (among them the map elements
// that point to chains being deleted); changed chains are flushed and
// refilled, new chains filled; stale chains are flushed, so that nothing
// in them points anywhere; new elements come; stale sets go, now that no
// rule refers to them.
//
// Stale chains are deleted in a second transaction. On kernels before 6.2
// a chain stays referenced for a short while after the last map element
// that pointed to it is gone (kube-proxy waits a second); apply retries
// that transaction and leaves what is still busy for the next apply.
//
// A change set that creates, rebuilds or deletes the table is one
// transaction, which starts by adding the table and deleting it (as nft
// scripts do, so that it holds whether or not the table exists by then)
// and, unless the table goes, writes it anew from the desired state. In a
// table that the batch itself created, the batch names each anonymous map,
// where otherwise the kernel searches for a free "__map%d" name with one
// sscanf per set in the table: at 10k Services that cuts the kernel's time
// for a new table from about 12.5 s to 8 s (the rest is the kernel's list
// walks, quadratic in the number of sets).
func transactions(p *Plan) []transaction {
	cs := p.Changes
	if cs == nil || cs.Empty() {
		return nil
	}
	main := transaction{family: cs.Family, table: cs.Name}
	switch cs.Table {
	case diff.DeleteTable:
		main.ops = []op{{kind: opAddTable}, {kind: opDeleteTable}}
		return []transaction{main}
	case diff.CreateTable, diff.RecreateTable:
		desired := p.Desired
		if desired == nil {
			desired = diff.ReplayNFTables(p.Live, cs)
		}
		main.ops = createOps(desired, op{kind: opAddTable}, op{kind: opDeleteTable})
		return []transaction{main}
	}
	if p.Live != nil {
		main.declare = p.Live.Sets
	}
	main.ops = changeOps(cs)
	out := []transaction{main}
	var stale []op
	for _, c := range cs.Chains {
		if c.Verb == diff.DeleteChain {
			stale = append(stale, op{kind: opDeleteChain, name: c.Name})
		}
	}
	if len(stale) > 0 {
		out = append(out, transaction{family: cs.Family, table: cs.Name, ops: stale})
	}
	return out
}

// changeOps is the main transaction of an incremental change set, without
// the table (see transactions), after the ops of head. The list is sized
// once: a new table at 10k Services in the compact layout is 113k ops of
// 96 bytes.
func changeOps(cs *diff.NFTablesChangeSet, head ...op) []op {
	ops := append(make([]op, 0, len(head)+opBound(cs)), head...)
	for _, c := range cs.Sets {
		if c.Verb == diff.CreateSet {
			ops = append(ops, op{kind: opAddSet, set: c.Set})
		}
	}
	for _, c := range cs.Chains {
		if c.Verb == diff.CreateChain {
			ops = append(ops, op{kind: opAddChain, chain: &nft.Chain{Name: c.Name, Base: c.Base, Comment: c.Comment}})
		}
	}
	for _, c := range cs.Sets {
		if c.Verb == diff.UpdateSet && len(c.Removed) > 0 {
			ops = append(ops, op{kind: opDeleteElements, name: c.Set.Name, elems: c.Removed})
		}
	}
	for _, c := range cs.Chains {
		switch c.Verb {
		case diff.ReplaceChain:
			ops = append(ops, op{kind: opFlushChain, name: c.Name})
			ops = appendRules(ops, c.Name, c.Rules)
		case diff.CreateChain:
			ops = appendRules(ops, c.Name, c.Rules)
		}
	}
	for _, c := range cs.Chains {
		if c.Verb == diff.DeleteChain && len(c.Old) > 0 {
			ops = append(ops, op{kind: opFlushChain, name: c.Name})
		}
	}
	for _, c := range cs.Sets {
		if (c.Verb == diff.CreateSet || c.Verb == diff.UpdateSet) && len(c.Added) > 0 {
			ops = append(ops, op{kind: opAddElements, name: c.Set.Name, elems: c.Added})
		}
	}
	for _, c := range cs.Sets {
		if c.Verb == diff.DeleteSet {
			ops = append(ops, op{kind: opDeleteSet, name: c.Set.Name, set: c.Set})
		}
	}
	return ops
}

// createOps writes a whole table's sets, chains, rules and elements into a
// table that has none, in the same order as changeOps, after the ops of
// head.
func createOps(rs *nft.Ruleset, head ...op) []op {
	head = append(head, op{kind: opAddTable, comment: rs.Comment})
	return changeOps(diff.NFTables(rs, nil), head...)
}

// opBound is at least the number of ops changeOps makes of cs: a set is
// added, loses and gains elements at most, or is deleted; a chain is
// added, flushed or deleted, and gets its rules.
func opBound(cs *diff.NFTablesChangeSet) int {
	n := 3*len(cs.Sets) + len(cs.Chains)
	for _, c := range cs.Chains {
		n += len(c.Rules)
	}
	return n
}

func appendRules(ops []op, chain string, rules []nft.Rule) []op {
	for _, r := range rules {
		ops = append(ops, op{kind: opAddRule, name: chain, rule: r})
	}
	return ops
}
