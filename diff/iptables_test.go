package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

func mustParse(t *testing.T, text string) *ipt.Ruleset {
	t.Helper()
	rs, err := ipt.Parse([]byte(text), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// applyEdits does to rules what iptables-restore does with the edits'
// lines: -D deletes the first equal rule, -I 1 inserts first, -A appends.
func applyEdits(rules []ipt.Rule, edits []Edit) []ipt.Rule {
	out := slices.Clone(rules)
	for _, e := range edits {
		switch {
		case e.Delete:
			if i := slices.Index(out, e.Rule); i >= 0 {
				out = slices.Delete(out, i, i+1)
			}
		case e.Append:
			out = append(out, e.Rule)
		default:
			out = slices.Insert(out, 0, e.Rule)
		}
	}
	return out
}

// TestEditsNameRulesByContent changes random dispatch chains (rules, then
// must-be-last rules) and applies the edits diff plans to the live chain
// with foreign rules added anywhere in it after the read, as another
// program may add them before the restore runs. Every desired rule must be
// there, none that should go, and the must-be-last rules last among the
// tool's rules; without foreign rules, the result is what After says.
func TestEditsNameRulesByContent(t *testing.T) {
	own := render.IPTablesOwnership()
	r := rand.New(rand.NewPCG(1, 2))
	edited := 0
	for i := 0; i < 2000; i++ {
		old := randomDispatchChain(r)
		next := randomlyChanged(r, old)
		c := IPTablesChange{Verb: ReplaceChain, Table: ipt.NAT, Chain: "KUBE-SERVICES", Old: old, Rules: next}
		var ok bool
		if c.Edits, ok = unorderedEdits(next, old, own); !ok || len(c.Edits) == 0 {
			continue // rewriting is shorter, or nothing changes
		}
		edited++
		if got := c.After(); !sameRules(ipt.NAT, &ipt.Chain{Name: "KUBE-SERVICES", Rules: next}, &ipt.Chain{Name: "KUBE-SERVICES", Rules: got}, own) {
			t.Fatalf("edits %v turn %v into %v, want the rules of %v", c.Edits, old, got, next)
		}
		if got := applyEdits(old, c.Edits); !slices.Equal(got, c.After()) {
			t.Fatalf("After says %v, the edits give %v", c.After(), got)
		}
		live := slices.Clone(old)
		for k := 0; k < r.IntN(4)+1; k++ {
			p := r.IntN(len(live) + 1)
			live = slices.Insert(live, p, ipt.Rule(fmt.Sprintf("-s 192.0.2.%d/32 -j ACCEPT", k)))
		}
		got := applyEdits(live, c.Edits)
		ours := slices.DeleteFunc(slices.Clone(got), func(x ipt.Rule) bool { return strings.HasPrefix(string(x), "-s 192.0.2.") })
		if !sameRules(ipt.NAT, &ipt.Chain{Name: "KUBE-SERVICES", Rules: next}, &ipt.Chain{Name: "KUBE-SERVICES", Rules: ours}, own) {
			t.Fatalf("with foreign rules added, edits %v turn %v into %v, want the rules of %v", c.Edits, live, got, next)
		}
	}
	if edited < 200 {
		t.Fatalf("only %d of 2000 changes were edits; the test proves little", edited)
	}

	// An ordered chain is never edited: its rules' places carry meaning.
	live := mustParse(t, "*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A -j KUBE-SEP-A\n-A KUBE-SVC-A -j KUBE-SEP-B\nCOMMIT\n")
	desired := mustParse(t, "*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A -j KUBE-SEP-A\n-A KUBE-SVC-A -j KUBE-SEP-C\n-A KUBE-SVC-A -j KUBE-SEP-B\nCOMMIT\n")
	cs := IPTables(desired, live, own)
	if len(cs.Changes) != 1 || cs.Changes[0].Edits != nil {
		t.Fatalf("an ordered chain's change must rewrite it: %+v", cs.Changes)
	}
}

// lastRule is a must-be-last rule of a dispatch chain.
func lastRule(i int) ipt.Rule {
	return ipt.Rule(fmt.Sprintf(`-m comment --comment "L%d; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS`, i))
}

// randomDispatchChain is up to 30 rules, some repeated, then up to two
// must-be-last rules.
func randomDispatchChain(r *rand.Rand) []ipt.Rule {
	var rules []ipt.Rule
	for j := 0; j < r.IntN(30); j++ {
		rules = append(rules, ipt.Rule(fmt.Sprintf("-d 10.96.0.%d/32 -j KUBE-SVC-%d", r.IntN(40), r.IntN(3))))
	}
	for j := 0; j < r.IntN(3); j++ {
		rules = append(rules, lastRule(r.IntN(3)))
	}
	return rules
}

// randomlyChanged is old with a few rules deleted, added first, or
// must-be-last rules appended.
func randomlyChanged(r *rand.Rand, old []ipt.Rule) []ipt.Rule {
	next := slices.Clone(old)
	for k := 0; k < r.IntN(4)+1; k++ {
		p := r.IntN(len(next) + 1)
		switch r.IntN(3) {
		case 0:
			if p < len(next) {
				next = slices.Delete(next, p, p+1)
			}
		case 1:
			next = append(next, lastRule(r.IntN(3)))
		default:
			next = slices.Insert(next, 0, ipt.Rule(fmt.Sprintf("-d 10.96.1.%d/32 -j KUBE-SVC-%d", r.IntN(40), r.IntN(3))))
		}
	}
	return next
}

func TestOwnershipAndForeignRules(t *testing.T) {
	live := mustParse(t, `*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-OLD - [0:0]
:KUBE-SEP-OLD - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:USER - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A PREROUTING -s 10.0.0.1/32 -j KUBE-SERVICES
-A KUBE-SERVICES -j KUBE-SVC-OLD
-A KUBE-SVC-OLD -j KUBE-SEP-OLD
-A KUBE-SEP-OLD -p tcp -m tcp -j DNAT --to-destination 10.1.1.1:80
-A USER -j KUBE-SEP-OLD
COMMIT
`)
	desired := mustParse(t, `*nat
:PREROUTING - [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
COMMIT
`)
	cs := IPTables(desired, live, render.IPTablesOwnership())
	var got []string
	for _, c := range cs.Changes {
		got = append(got, string(c.Verb)+" "+c.Chain)
	}
	// KUBE-SVC-OLD goes; KUBE-SEP-OLD stays, emptied, because the foreign
	// chain USER jumps to it; the user's own rule into KUBE-SERVICES (it has
	// a source match) and KUBE-PROXY-CANARY are not the tool's.
	want := []string{"replace-chain KUBE-SEP-OLD", "replace-chain KUBE-SERVICES", "delete-chain KUBE-SVC-OLD"}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if !slices.Equal(cs.Kept, []string{"nat/KUBE-SEP-OLD"}) {
		t.Errorf("kept %q", cs.Kept)
	}
	// Replaying the change set gives a state with nothing left to change.
	if again := IPTables(desired, ReplayIPTables(live, cs), render.IPTablesOwnership()); !again.Empty() {
		t.Errorf("after replay, still %d changes: %+v", len(again.Changes), again.Changes)
	}
}

func TestSharedKubeletChain(t *testing.T) {
	live := mustParse(t, `*filter
:INPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
-A KUBE-FIREWALL -m comment --comment "kubelet rule" -j DROP
COMMIT
`)
	// Rendered without localhost NodePorts: the chain is declared empty.
	desired := mustParse(t, `*filter
:INPUT - [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -j KUBE-FIREWALL
COMMIT
`)
	if cs := IPTables(desired, live, render.IPTablesOwnership()); !cs.Empty() {
		t.Errorf("kubelet's KUBE-FIREWALL rules must be left alone: %+v", cs.Changes)
	}
	if cs := IPTables(EmptyIPTables(nodetable.IPv4), live, render.IPTablesOwnership()); !cs.Empty() {
		t.Errorf("reset must leave KUBE-FIREWALL and its jumps: %+v", cs.Changes)
	}
}
