package iptables_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
)

// changeBoth are two snapshots whose difference changes both tables:
// web's endpoint moves (nat), other goes away (nat: its chains are
// deleted), and empty has no endpoints (filter: a REJECT rule).
func changeBoth() (first, second string) {
	first = snapshot(web("10.244.0.11"), other("10.244.0.13"))
	second = snapshot(web("10.244.1.12"), svc{name: "empty", ip: "10.96.0.50", port: 80, targetPort: 8080})
	return first, second
}

// TestOneRestorePerFamily checks that a family's tables go to the kernel
// in one iptables-restore, filter before nat: once started, that process
// has its whole input and writes every table even if the tool dies
// (see Tables for why filter comes first).
func TestOneRestorePerFamily(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			first, second := changeBoth()
			n.apply(t, first)
			scripts := n.apply(t, second)
			if len(scripts) != 1 {
				t.Fatalf("%d restores for one family, want 1:\n%s", len(scripts), bytes.Join(scripts, []byte("----\n")))
			}
			f, nat := bytes.Index(scripts[0], []byte("*filter\n")), bytes.Index(scripts[0], []byte("*nat\n"))
			if f < 0 || nat < f || bytes.Count(scripts[0], []byte("\nCOMMIT\n")) != 2 {
				t.Fatalf("want the filter table, then the nat table, each committed:\n%s", scripts[0])
			}
			n.assertNoChanges(t, second)
		})
	}
}

// TestNATFailureLeavesFilterUnchanged makes the kernel reject the nat part
// of a restore that also changes filter. iptables-restore commits each
// table at its COMMIT line, on nf_tables too, so the filter part is in
// the kernel when the nat part fails; the undo must put it back.
func TestNATFailureLeavesFilterUnchanged(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			first, second := changeBoth()
			n.apply(t, first)
			plans := n.plan(t, second)
			blockChainDeletion(t, n, plans[0])
			before := n.read(t).String()
			sent := len(n.rec.restores)
			err := n.client.Apply(context.Background(), plans)
			var ae *applyipt.ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("got %v, want an ApplyError", err)
			}
			t.Logf("error: %v", err)
			scripts := n.rec.restores[sent:]
			if !bytes.Contains(scripts[0], []byte("*filter\n")) || !bytes.Contains(scripts[0], []byte("*nat\n")) {
				t.Fatalf("the failed restore did not hold both tables:\n%s", scripts[0])
			}
			if after := n.read(t).String(); after != before {
				t.Fatalf("a failed nat part left the kernel changed:\n%s", after)
			}
			if len(scripts) > 1 && !ae.RollbackOK {
				t.Errorf("the filter table was written back, but the error says otherwise: %v", err)
			}
			t.Logf("%d restores: the failed one and %d to undo what it committed", len(scripts), len(scripts)-1)
		})
	}
}

// blockChainDeletion makes a nat chain that the plan deletes impossible
// to delete: a foreign rule, added after planning, jumps to it.
func blockChainDeletion(t *testing.T, n *node, p *applyipt.Plan) {
	t.Helper()
	for _, c := range p.Changes.Changes {
		if c.Verb == diff.DeleteChain && c.Table == "nat" {
			n.ipt(t, "-t nat -N USER-LATE")
			n.ipt(t, "-t nat -A USER-LATE -j "+c.Chain)
			return
		}
	}
	t.Fatal("the plan deletes no nat chain")
}

// TestUndoPutsAnEditedChainBackInOrder: the filter part of a failed
// restore deleted a rule from the middle of an unordered chain by content;
// the undo must put the chain back as it was read, in its order, not just
// with its rules.
func TestUndoPutsAnEditedChainBackInOrder(t *testing.T) {
	empty := func(name, ip string) svc { return svc{name: name, ip: ip, port: 80, targetPort: 8080} }
	first := snapshot(empty("empty1", "10.96.0.51"), empty("empty2", "10.96.0.52"), empty("empty3", "10.96.0.53"), other("10.244.0.13"))
	served := empty("empty2", "10.96.0.52")
	served.endpoints = []string{"10.244.0.13"}
	second := snapshot(empty("empty1", "10.96.0.51"), served, empty("empty3", "10.96.0.53"))
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			n.apply(t, first)
			plans := n.plan(t, second)
			blockChainDeletion(t, n, plans[0])
			before := n.read(t).String()
			sent := len(n.rec.restores)
			if err := n.client.Apply(context.Background(), plans); err == nil {
				t.Fatal("the nat part was blocked, yet the apply succeeded")
			}
			if !bytes.Contains(n.rec.restores[sent], []byte("\n-D KUBE-SERVICES -d 10.96.0.52/32 ")) {
				t.Fatalf("the failed restore did not delete the filter rule by content:\n%s", n.rec.restores[sent])
			}
			if after := n.read(t).String(); after != before {
				t.Fatalf("the undo left the kernel changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
