package iptables_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// TestChangesFollowTheSnapshot applies a series of snapshots to a node that
// also holds 200 filler Services, checks after each that traffic follows
// the new state, that a second plan is empty, and that the restore input
// touched only the changed Service's chains and the dispatch chains.
func TestChangesFollowTheSnapshot(t *testing.T) {
	filler := manyServices(200)
	with := func(s ...svc) string { return snapshot(append(s, filler...)...) }
	steps := []struct {
		name      string
		snap      string
		dst       netip.AddrPort
		reach     []string
		maxChains int // chain lines in the restore input
	}{
		{"add endpoint", with(web("10.244.0.11", "10.244.1.12", "10.244.0.13"), other("10.244.0.13")), webIP, []string{"a", "b", "c"}, 2},
		{"remove endpoint", with(web("10.244.0.11", "10.244.0.13"), other("10.244.0.13")), webIP, []string{"a", "c"}, 2},
		{"change target port", with(svc{name: "web", ip: "10.96.0.10", port: 80, targetPort: 9090, endpoints: []string{"10.244.0.11", "10.244.0.13"}}, other("10.244.0.13")), webIP, []string{"a", "c"}, 5},
		{"change service port", with(svc{name: "web", ip: "10.96.0.10", port: 81, targetPort: 9090, endpoints: []string{"10.244.0.11", "10.244.0.13"}}, other("10.244.0.13")), netip.MustParseAddrPort("10.96.0.10:81"), []string{"a", "c"}, 2},
		{"add service", with(web("10.244.0.11"), other("10.244.0.13"), svc{name: "new", ip: "10.96.0.30", port: 80, targetPort: 8080, endpoints: []string{"10.244.1.12"}}), netip.MustParseAddrPort("10.96.0.30:80"), []string{"b"}, 8},
		{"delete service", with(other("10.244.0.13")), otherIP, []string{"c"}, 8},
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			withPods(t, n)
			n.apply(t, with(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13")))
			assertReaches(t, n, webIP, "a", "b")
			for _, s := range steps {
				scripts := n.apply(t, s.snap)
				chains, lines := countScript(scripts)
				t.Logf("%s: %d restore(s), %d chains, %d lines", s.name, len(scripts), chains, lines)
				if chains > s.maxChains || lines > 8*s.maxChains {
					t.Errorf("%s: the restore input declared %d chains in %d lines, want at most %d chains: it must touch only the changed Service:\n%s",
						s.name, chains, lines, s.maxChains, scripts)
				}
				n.assertNoChanges(t, s.snap)
				assertReaches(t, n, s.dst, s.reach...)
			}
			if _, err := n.lab.Client().DialTCP(context.Background(), webIP, 300*time.Millisecond); err == nil {
				t.Errorf("the deleted Service still answers")
			}
		})
	}
}

// TestNoDisruptionWhileApplying keeps a bounded stream of connections to an
// unchanged Service while other Services change and are applied.
func TestNoDisruptionWhileApplying(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			withPods(t, n)
			base := []svc{other("10.244.0.13")}
			n.apply(t, snapshot(append(base, web("10.244.0.11"))...))

			var ok, failed atomic.Int64
			var firstErr atomic.Value
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ { // bounded
					select {
					case <-stop:
						return
					default:
					}
					if _, err := n.lab.Client().DialTCP(context.Background(), otherIP, time.Second); err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					} else {
						ok.Add(1)
					}
				}
			}()
			for i := 0; i < 6; i++ {
				eps := [][]string{{"10.244.0.11"}, {"10.244.1.12"}, {"10.244.0.11", "10.244.1.12"}}[i%3]
				extra := svc{name: "extra", ip: "10.96.0.40", port: 80, targetPort: 8080, endpoints: eps}
				if i%2 == 1 {
					extra.port = 81
				}
				n.apply(t, snapshot(append(base, web(eps...), extra)...))
				time.Sleep(50 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			t.Logf("%d connections to the unchanged Service, %d failed", ok.Load(), failed.Load())
			if failed.Load() > 0 || ok.Load() < 20 {
				t.Fatalf("%d of %d connections failed (first error: %v)", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
			}
		})
	}
}

// TestFailedRestoreLeavesNoHalfState fails a restore before it runs and
// checks that the node ends exactly as it was, and still applies after.
// TestNATFailureLeavesFilterUnchanged fails one half way.
func TestFailedRestoreLeavesNoHalfState(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			withPods(t, n)
			first := snapshot(web("10.244.0.11"), other("10.244.0.13"))
			n.apply(t, first)
			before := n.read(t).String()
			second := snapshot(web("10.244.1.12"), svc{name: "new", ip: "10.96.0.30", port: 80, targetPort: 8080, nodePort: 30030, endpoints: []string{"10.244.0.11"}},
				svc{name: "empty", ip: "10.96.0.50", port: 80, targetPort: 8080})

			plans := n.plan(t, second)
			n.rec.failOn = len(n.rec.restores) + 1
			err := n.client.Apply(context.Background(), plans)
			n.rec.failOn = 0
			var ae *applyipt.ApplyError
			if !errors.As(err, &ae) || ae.RollbackOK {
				t.Fatalf("got %v, want an ApplyError saying nothing was changed", err)
			}
			t.Logf("failing restore: %v", err)
			if after := n.read(t).String(); after != before {
				t.Fatalf("a failed restore left the kernel changed:\n%s", after)
			}
			assertReaches(t, n, webIP, "a")
			n.apply(t, second)
			assertReaches(t, n, webIP, "b")
		})
	}
}

// TestRealKernelErrorIsReported lets the kernel itself reject a change:
// a stale chain that a foreign rule in another owned chain's place blocks.
func TestRealKernelErrorIsReported(t *testing.T) {
	n := newNode(t, applyipt.NFT)
	n.apply(t, snapshot(web("10.244.0.11")))
	plans := n.plan(t, snapshot())
	// Make the planned restore impossible: a rule the plan does not know about
	// now jumps to a chain the plan deletes.
	for _, c := range plans[0].Changes.Changes {
		if c.Verb == diff.DeleteChain {
			n.ipt(t, "-t nat -N USER-LATE")
			n.ipt(t, "-t nat -A USER-LATE -j "+c.Chain)
			break
		}
	}
	before := n.read(t).String()
	err := n.client.Apply(context.Background(), plans)
	if err == nil {
		t.Fatal("apply succeeded although the kernel could not delete a referenced chain")
	}
	t.Logf("error: %v", err)
	if after := n.read(t).String(); after != before {
		t.Fatalf("a rejected apply changed the kernel:\n%s", after)
	}
	_ = netlab.TCP
}
