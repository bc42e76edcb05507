package iptables

import (
	"bytes"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// The "-S" trick pays when many chains are named and the table is still
// small: it lists the whole live table, and iptables-nft lists a large table
// very slowly (over 100 s at 10k Services).
const (
	fullCacheMinChanges = 200  // changed chains, at least
	fullCacheMaxLive    = 2000 // chains already in the table, at most
)

// appendScript appends to dst the iptables-restore --noflush input that
// makes one table's changes in one transaction, and returns dst as it is
// when the table has none.
//
// A chain line flushes an existing user-defined chain under --noflush, so
// every chain that is created, rewritten or deleted is declared first, with
// the built-in chains that get jump rules; then come the rules of created
// and replaced chains, the jump insertions (at position 1, as kube-proxy
// prepends them) and deletions, and last the -X of deleted chains, after
// every rule that jumped to them is gone.
//
// No line names a rule by its number. Between the read that planned the
// changes and this restore, another program may add or remove rules, and
// rule N is then another rule. So a replaced chain is declared and written
// whole, which also drops whatever else was put in it, except an unordered
// chain with Edits (a dispatch chain that gains or loses a few Services):
// its edits delete by content (-D CHAIN spec deletes the first rule equal
// to spec) and insert first or append (see diff.Edit), which land right
// whatever else the chain holds. Jumps in built-in chains, which the tool
// shares with everyone, are likewise inserted first and deleted by content.
//
// On the nf_tables backend, for large inputs into a small table, a list
// command ("-S") first makes iptables-restore fetch the whole table once
// instead of building its chain cache one chain at a time, which is
// quadratic in the number of chains named in the input (1k Services from
// empty: 2.3 s without, 0.6 s with). liveChains is the table's chain count.
//
// The input is written straight into dst, grown once to its size: at 30k
// Services a full sync's input is about 100 MB, and growing it as it is
// written allocated some five times that.
func appendScript(dst []byte, changes []diff.IPTablesChange, table ipt.TableName, backend Backend, liveChains int) []byte {
	n, size := scriptSize(changes, table)
	if n == 0 {
		return dst
	}
	b := bytes.NewBuffer(slices.Grow(dst, size))
	b.WriteString("*" + string(table) + "\n")
	if backend == NFT && n >= fullCacheMinChanges && liveChains <= fullCacheMaxLive {
		b.WriteString("-S\n")
	}
	declared := map[string]bool{}
	for _, c := range changes {
		if c.Table != table || declared[c.Chain] || len(c.Edits) > 0 {
			// An edited chain is not declared: that would flush it.
			continue
		}
		// A built-in chain declared with policy "-" keeps its policy and
		// rules under --noflush, and is created where the nf_tables backend
		// has not made it yet.
		declared[c.Chain] = true
		b.WriteString(":")
		b.WriteString(c.Chain)
		b.WriteString(" - [0:0]\n")
	}
	for _, c := range changes {
		if c.Table != table {
			continue
		}
		if len(c.Edits) > 0 {
			writeEdits(b, c.Chain, c.Edits)
			continue
		}
		switch c.Verb {
		case diff.CreateChain, diff.ReplaceChain:
			for _, r := range c.Rules {
				writeRule(b, "-A ", c.Chain, r)
			}
		case diff.InsertJump:
			b.WriteString("-I " + c.Chain + " 1 " + string(c.Rules[0]) + "\n")
		case diff.DeleteJump:
			b.WriteString("-D " + c.Chain + " " + string(c.Rules[0]) + "\n")
		}
	}
	for _, c := range changes {
		if c.Table == table && c.Verb == diff.DeleteChain {
			b.WriteString("-X " + c.Chain + "\n")
		}
	}
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

// writeEdits writes a chain's edits, each naming its rule by content.
func writeEdits(b *bytes.Buffer, chain string, edits []diff.Edit) {
	for _, e := range edits {
		switch {
		case e.Delete:
			writeRule(b, "-D ", chain, e.Rule)
		case e.Append:
			writeRule(b, "-A ", chain, e.Rule)
		default:
			writeRule(b, "-I ", chain+" 1", e.Rule)
		}
	}
}

// writeRule writes one rule line, "-A CHAIN RULE", without building it as
// a string first: a full sync writes a million of them.
func writeRule(b *bytes.Buffer, verb, chain string, r ipt.Rule) {
	b.WriteString(verb)
	b.WriteString(chain)
	b.WriteByte(' ')
	b.WriteString(string(r))
	b.WriteByte('\n')
}

// scriptSize counts table's changes, and gives the size of their restore
// input or a little more.
func scriptSize(changes []diff.IPTablesChange, table ipt.TableName) (n, size int) {
	size = len(table) + len("*\n-S\nCOMMIT\n")
	for _, c := range changes {
		if c.Table != table {
			continue
		}
		n++
		line := len(c.Chain) + len("-I  1 \n")
		size += 2*line + len(" - [0:0]") // its declaration, or its -X
		for _, r := range c.Rules {
			size += line + len(r)
		}
		for _, e := range c.Edits {
			size += line + len(e.Rule)
		}
	}
	return n, size
}
