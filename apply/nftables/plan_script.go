package nftables

import (
	"fmt"
	"strconv"
	"strings"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// scriptMarker starts each transaction in Script's output; what follows
// it, up to the next marker, is one `nft -f` input.
const scriptMarker = "# transaction "

// Script returns the exact changes apply would make, as `nft -f` input:
// one section per transaction, each headed by a "# transaction N: ..."
// comment line, in the order Apply sends them (every table's changes,
// then every table's stale chains). Each section is one atomic `nft -f`
// run; run them in order. It is what --dry-run prints.
func Script(plans []*Plan) string {
	var main, stale []transaction
	for _, p := range plans {
		if txs := transactions(p); len(txs) > 0 {
			main = append(main, txs[0])
			stale = append(stale, txs[1:]...)
		}
	}
	var b strings.Builder
	for i, tx := range append(main, stale...) {
		what := "changes"
		if i >= len(main) {
			what = "stale chains, once nothing points to them"
		}
		fmt.Fprintf(&b, "%s%d: %s %s, %s\n", scriptMarker, i+1, tx.family, tx.table, what)
		writeScript(&b, tx)
	}
	return b.String()
}

// writeScript writes one transaction as nft commands.
func writeScript(b *strings.Builder, tx transaction) {
	head := string(tx.family) + " " + tx.table
	for _, o := range tx.ops {
		switch o.kind {
		case opAddTable:
			b.WriteString("add table " + head)
			if o.comment != "" {
				b.WriteString(" { comment " + quote(o.comment) + "; }")
			}
			b.WriteString("\n")
		case opDeleteTable:
			b.WriteString("delete table " + head + "\n")
		case opAddSet:
			b.WriteString("add " + setKind(o.set) + " " + head + " " + o.set.Name + " { " + setClauses(o.set) + "}\n")
		case opDeleteSet:
			b.WriteString("delete " + setKind(o.set) + " " + head + " " + o.name + "\n")
		case opAddElements:
			writeElements(b, "add element "+head+" "+o.name, o.elems, true)
		case opDeleteElements:
			writeElements(b, "delete element "+head+" "+o.name, o.elems, false)
		case opAddChain:
			b.WriteString("add chain " + head + " " + o.chain.Name + chainClauses(o.chain) + "\n")
		case opFlushChain:
			b.WriteString("flush chain " + head + " " + o.name + "\n")
		case opDeleteChain:
			b.WriteString("delete chain " + head + " " + o.name + "\n")
		case opAddRule:
			b.WriteString("add rule " + head + " " + o.name + " " + scriptRule(o.rule) + "\n")
		}
	}
}

func quote(s string) string { return `"` + s + `"` }

func setKind(s *nft.Set) string {
	if s != nil && s.IsMap() {
		return "map"
	}
	return "set"
}

// setClauses is the body of a set declaration: "type ...; flags ...; ".
func setClauses(s *nft.Set) string {
	c := s.TypeClause() + "; "
	if s.Size != 0 {
		c += "size " + strconv.FormatUint(s.Size, 10) + "; "
	}
	if len(s.Flags) > 0 {
		flags := make([]string, len(s.Flags))
		for i, f := range s.Flags {
			flags[i] = string(f)
		}
		c += "flags " + strings.Join(flags, ",") + "; "
	}
	if s.Timeout != 0 {
		c += "timeout " + nft.FormatDuration(s.Timeout) + "; "
	}
	if s.Comment != "" {
		c += "comment " + quote(s.Comment) + "; "
	}
	return c
}

// chainClauses is a chain declaration's body, or "" for a plain chain.
func chainClauses(c *nft.Chain) string {
	if c.Base == nil && c.Comment == "" {
		return ""
	}
	s := " { "
	if b := c.Base; b != nil {
		s += "type " + string(b.Type) + " hook " + string(b.Hook) + " priority " + string(b.Priority) +
			"; policy " + string(b.Policy) + "; "
	}
	if c.Comment != "" {
		s += "comment " + quote(c.Comment) + "; "
	}
	return s + "}"
}

// writeElements writes one element command, one element a line; withData
// writes comments and map values (delete needs the key only).
func writeElements(b *strings.Builder, cmd string, elems []nft.Element, withData bool) {
	b.WriteString(cmd + " {")
	for i, e := range elems {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n\t" + e.Key)
		if withData && e.Comment != "" {
			b.WriteString(" comment " + quote(e.Comment))
		}
		if withData && e.Value != "" {
			b.WriteString(" : " + e.Value)
		}
	}
	b.WriteString("\n}\n")
}

// scriptRule spells a rule as nft reads it back into the same rule. The
// listing differs from its input in one case, which EncodeScript knows
// (an anonymous set merged into one range), so the rule goes through it.
func scriptRule(r nft.Rule) string {
	if !strings.Contains(string(r), "{ ") {
		return string(r)
	}
	one := &nft.Ruleset{Family: nft.IPv4, Table: "t", Chains: []*nft.Chain{{Name: "c", Rules: []nft.Rule{r}}}}
	for _, line := range strings.Split(one.Script(), "\n") {
		if strings.HasPrefix(line, "\t\t") {
			return strings.TrimPrefix(line, "\t\t")
		}
	}
	return string(r)
}
