package diff

import (
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Edit is one positional change to a chain's rules: insert Rule at Pos, or
// delete the rule at Pos (1-based, as iptables numbers rules, counted after
// the edits before it).
type Edit struct {
	Insert bool
	Pos    int
	Rule   ipt.Rule
}

// Edits returns the positional edits that turn a replaced chain's old rules
// into its new ones, or ok=false when rewriting the chain is shorter.
// Applied in order, they are a minimal line diff, so a big dispatch chain
// that gains one Service gains one rule instead of being rewritten.
func (c IPTablesChange) Edits() (edits []Edit, ok bool) {
	if c.Verb != ReplaceChain || len(c.Old) == 0 {
		return nil, false
	}
	pos := 1
	for _, d := range lineDiff(c.Old, c.Rules) {
		lines := strings.Split(strings.TrimSuffix(d.Text, "\n"), "\n")
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			pos += len(lines)
		case diffmatchpatch.DiffDelete:
			for range lines {
				edits = append(edits, Edit{Pos: pos})
			}
		case diffmatchpatch.DiffInsert:
			for _, l := range lines {
				edits = append(edits, Edit{Insert: true, Pos: pos, Rule: ipt.Rule(l)})
				pos++
			}
		}
		if len(edits) > len(c.Rules) {
			return nil, false
		}
	}
	return edits, true
}
