package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
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

// TestEditsTurnOldIntoNew replays the positional edits on random rule
// lists and checks they produce exactly the new list.
func TestEditsTurnOldIntoNew(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		var old []ipt.Rule
		for j := 0; j < r.IntN(30)+1; j++ {
			old = append(old, ipt.Rule(fmt.Sprintf("-j R%d", r.IntN(40))))
		}
		next := slices.Clone(old)
		for k := 0; k < r.IntN(4)+1; k++ {
			p := r.IntN(len(next) + 1)
			if r.IntN(2) == 0 && p < len(next) {
				next = slices.Delete(next, p, p+1)
			} else {
				next = slices.Insert(next, p, ipt.Rule(fmt.Sprintf("-j N%d", r.IntN(40))))
			}
		}
		edits, ok := IPTablesChange{Verb: ReplaceChain, Old: old, Rules: next}.Edits()
		if !ok {
			continue // rewriting is shorter
		}
		got := slices.Clone(old)
		for _, e := range edits {
			if e.Insert {
				got = slices.Insert(got, e.Pos-1, e.Rule)
			} else {
				got = slices.Delete(got, e.Pos-1, e.Pos)
			}
		}
		if !slices.Equal(got, next) {
			t.Fatalf("edits %v turn %v into %v, want %v", edits, old, got, next)
		}
	}
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
