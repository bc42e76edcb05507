package iptables

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// TestScriptGrowsOnce: scriptSize is at least the input appendScript
// writes, for every kind of change, so the input is allocated once; and
// what it appends after earlier content leaves that content alone.
func TestScriptGrowsOnce(t *testing.T) {
	var changes []diff.IPTablesChange
	for i := range 50 {
		chain := fmt.Sprintf("KUBE-SEP-%016d", i)
		rule := ipt.Rule(fmt.Sprintf("-m comment --comment ns/svc-%d:http -m tcp -p tcp -j DNAT --to-destination 10.0.%d.1:80", i, i))
		changes = append(changes,
			diff.IPTablesChange{Verb: diff.CreateChain, Table: ipt.NAT, Chain: chain, Rules: []ipt.Rule{rule, rule}},
			diff.IPTablesChange{Verb: diff.ReplaceChain, Table: ipt.NAT, Chain: chain + "R", Rules: []ipt.Rule{rule}},
			diff.IPTablesChange{Verb: diff.ReplaceChain, Table: ipt.NAT, Chain: "KUBE-SERVICES", Edits: []diff.Edit{{Delete: true, Rule: rule}, {Append: true, Rule: rule}, {Rule: rule}}},
			diff.IPTablesChange{Verb: diff.InsertJump, Table: ipt.NAT, Chain: "PREROUTING", Rules: []ipt.Rule{rule}},
			diff.IPTablesChange{Verb: diff.DeleteJump, Table: ipt.NAT, Chain: "OUTPUT", Rules: []ipt.Rule{rule}},
			diff.IPTablesChange{Verb: diff.DeleteChain, Table: ipt.NAT, Chain: chain + "D"},
			diff.IPTablesChange{Verb: diff.CreateChain, Table: ipt.Filter, Chain: chain + "F", Rules: []ipt.Rule{rule}},
		)
	}
	for _, table := range []ipt.TableName{ipt.NAT, ipt.Filter} {
		for _, backend := range []Backend{NFT, Legacy} {
			_, size := scriptSize(changes, table)
			head := []byte("*filter\nCOMMIT\n")
			out := appendScript(bytes.Clone(head), changes, table, backend, 0)
			if got := len(out) - len(head); got > size {
				t.Errorf("%s, %s: wrote %d bytes, scriptSize said %d", table, backend, got, size)
			}
			if !bytes.HasPrefix(out, head) {
				t.Errorf("%s, %s: the earlier content changed", table, backend)
			}
		}
	}
	if out := appendScript([]byte("x"), changes, ipt.Mangle, NFT, 0); string(out) != "x" {
		t.Errorf("a table without changes appended %q", out[1:])
	}
}
