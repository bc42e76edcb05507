package diff

import (
	"fmt"
	"io"
	"strings"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Summary counts chains, rules, sets and elements added and removed. A
// set or map is counted by its declaration as well as by its elements:
// one that holds none (a foreign set that goes, say) is a change too.
func (cs *NFTablesChangeSet) Summary() Summary {
	var s Summary
	for _, c := range cs.Chains {
		countChain(&s, c.Verb, c.Old, c.Rules)
	}
	for _, c := range cs.Sets {
		switch c.Verb {
		case CreateSet:
			s.SetsAdded++
		case ReplaceSet:
			s.SetsChanged++
		case DeleteSet:
			s.SetsDeleted++
		}
		s.ElementsAdded += len(c.Added)
		s.ElementsRemoved += len(c.Removed)
	}
	return s
}

// WriteText writes the change set as a unified diff of the table's listing
// (`nft list table` syntax), grouped by set and chain: "-" lines are live
// state that goes, "+" lines state that comes, " " lines unchanged rules
// kept for context. Sets come before chains, each in change-set order, so
// the output is stable. liveName names where live was read from.
func (cs *NFTablesChangeSet) WriteText(w io.Writer, liveName string) error {
	if cs.Empty() {
		return nil
	}
	var b strings.Builder
	head := string(cs.Family) + " " + cs.Name
	fmt.Fprintf(&b, "--- live table %s (%s)\n+++ desired table %s\n", head, liveName, head)
	switch cs.Table {
	case CreateTable:
		fmt.Fprintf(&b, "@@ table %s: new table @@\n+table %s {\n", head, head)
		if cs.Comment != "" {
			b.WriteString("+\tcomment " + quoteNFT(cs.Comment) + "\n")
		}
		b.WriteString("+}\n")
	case RecreateTable:
		fmt.Fprintf(&b, "@@ table %s: rebuilt in one transaction, because %s @@\n", head, strings.Join(cs.Reasons, "; "))
	case DeleteTable:
		fmt.Fprintf(&b, "@@ table %s: deleted @@\n", head)
	}
	for _, c := range cs.Sets {
		writeNFTSetChange(&b, c)
	}
	for _, c := range cs.Chains {
		writeNFTChainChange(&b, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var setChangeTitles = map[Verb]string{
	CreateSet: "new", UpdateSet: "elements", ReplaceSet: "declaration changed", DeleteSet: "stale",
}

func writeNFTSetChange(b *strings.Builder, c NFTablesSetChange) {
	fmt.Fprintf(b, "@@ %s %s: %s @@\n", kind(c.Set), c.Set.Name, setChangeTitles[c.Verb])
	switch c.Verb {
	case CreateSet:
		writeSetBlock(b, "+", c.Set, c.Added)
	case DeleteSet:
		writeSetBlock(b, "-", c.Set, c.Removed)
	default:
		if c.Verb == ReplaceSet {
			writeSetDeclaration(b, "-", c.Old)
			writeSetDeclaration(b, "+", c.Set)
		}
		writeElements(b, "-", c.Removed)
		writeElements(b, "+", c.Added)
	}
}

// writeSetBlock writes a whole set as nft lists it, one element a line.
func writeSetBlock(b *strings.Builder, mark string, s *nft.Set, elems []nft.Element) {
	writeSetDeclaration(b, mark, s)
	if len(elems) > 0 {
		b.WriteString(mark + "\t\telements = {\n")
		writeElements(b, mark, elems)
		b.WriteString(mark + "\t\t}\n")
	}
	b.WriteString(mark + "\t}\n")
}

func writeElements(b *strings.Builder, mark string, elems []nft.Element) {
	for _, e := range elems {
		b.WriteString(mark + "\t\t\t" + elementText(e) + "\n")
	}
}

// writeSetDeclaration writes a set's head as nft lists it ("set NAME {",
// then type, size, flags, timeout and comment), one line each.
func writeSetDeclaration(b *strings.Builder, mark string, s *nft.Set) {
	var decl strings.Builder
	(&nft.Ruleset{Sets: []*nft.Set{s}}).Encode(&decl)
	lines := strings.Split(decl.String(), "\n")
	// Skip the "table  {" line and the closing "}" of the table and set.
	for _, l := range lines[1 : len(lines)-3] {
		b.WriteString(mark + l + "\n")
	}
}

// quoteNFT writes s as an nft string; nft strings have no escapes.
func quoteNFT(s string) string { return `"` + s + `"` }

// elementText is an element as nft lists it inside "elements = { }".
func elementText(e nft.Element) string {
	s := e.Key
	if e.Comment != "" {
		s += " comment " + quoteNFT(e.Comment)
	}
	if e.Value != "" {
		s += " : " + e.Value
	}
	return s
}

func writeNFTChainChange(b *strings.Builder, c NFTablesChainChange) {
	switch c.Verb {
	case CreateChain:
		fmt.Fprintf(b, "@@ chain %s: new @@\n", c.Name)
		writeChainDeclaration(b, "+", c.Name, c.Base, c.Comment)
		writeNFTRules(b, "+", c.Rules)
		b.WriteString("+\t}\n")
	case DeleteChain:
		fmt.Fprintf(b, "@@ chain %s: stale @@\n", c.Name)
		writeChainDeclaration(b, "-", c.Name, c.Base, c.Comment)
		writeNFTRules(b, "-", c.Old)
		b.WriteString("-\t}\n")
	case ReplaceChain:
		if c.DeclarationChanged() {
			fmt.Fprintf(b, "@@ chain %s: declaration changed @@\n", c.Name)
			writeChainDeclaration(b, "-", c.Name, c.OldBase, c.OldComment)
			writeChainDeclaration(b, "+", c.Name, c.Base, c.Comment)
		} else {
			fmt.Fprintf(b, "@@ chain %s: changed @@\n", c.Name)
		}
		writeLineDiff(b, c.Old, c.Rules, "\t\t", "\t\t")
	}
}

// writeChainDeclaration writes "chain NAME {" and the chain's comment and
// base-chain line as nft lists them.
func writeChainDeclaration(b *strings.Builder, mark, name string, base *nft.BaseChain, comment string) {
	b.WriteString(mark + "\tchain " + name + " {\n")
	if comment != "" {
		b.WriteString(mark + "\t\tcomment " + quoteNFT(comment) + "\n")
	}
	if base != nil {
		fmt.Fprintf(b, "%s\t\ttype %s hook %s priority %s; policy %s;\n", mark, base.Type, base.Hook, base.Priority, base.Policy)
	}
}

func writeNFTRules(b *strings.Builder, mark string, rules []nft.Rule) {
	for _, r := range rules {
		b.WriteString(mark + "\t\t" + string(r) + "\n")
	}
}
