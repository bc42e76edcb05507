package iptables

import (
	"bytes"

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

// Script returns the iptables-restore --noflush input that makes one
// table's changes in one transaction, or nil when the table has none.
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
func Script(changes []diff.IPTablesChange, table ipt.TableName, backend Backend, liveChains int) []byte {
	var b bytes.Buffer
	n := 0
	for _, c := range changes {
		if c.Table == table {
			n++
		}
	}
	if n == 0 {
		return nil
	}
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
		b.WriteString(":" + c.Chain + " - [0:0]\n")
	}
	for _, c := range changes {
		if c.Table != table {
			continue
		}
		if len(c.Edits) > 0 {
			writeEdits(&b, c.Chain, c.Edits)
			continue
		}
		switch c.Verb {
		case diff.CreateChain, diff.ReplaceChain:
			for _, r := range c.Rules {
				b.WriteString("-A " + c.Chain + " " + string(r) + "\n")
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
			b.WriteString("-D " + chain + " " + string(e.Rule) + "\n")
		case e.Append:
			b.WriteString("-A " + chain + " " + string(e.Rule) + "\n")
		default:
			b.WriteString("-I " + chain + " 1 " + string(e.Rule) + "\n")
		}
	}
}
