package ipvs

import (
	"net/netip"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// TestIPVSGracefulTermination holds a TCP connection open to one backend,
// removes that backend from the Service and checks kube-proxy's graceful
// termination: the real server stays at weight 0 and keeps its connection,
// new connections go elsewhere, plan shows it draining (not as a change),
// and WaitDrained deletes it once the connection is closed.
func TestIPVSGracefulTermination(t *testing.T) {
	lab := netlab.New(t)
	c, _ := vmClient(t, lab)
	names := map[netip.Addr]string{podA: "a", podB: "b"}
	for _, ip := range []netip.Addr{podA, podB} {
		serveHeld(t, lab.AddPod(names[ip], ip), 8080)
	}
	apply(t, c, renderTable(podTable(nodetable.TCP, podA, podB), "rr"))
	held := dialHeld(t, lab.Client(), vip)
	gone, err := held.ask()
	if err != nil {
		t.Fatal(err)
	}
	goneIP, keptIP := podA, podB
	if gone == "b" {
		goneIP, keptIP = podB, podA
	}
	desired := renderTable(podTable(nodetable.TCP, keptIP), "rr")
	plans := apply(t, c, desired)
	if s := plans[0].Changes.Summary(); s.DestinationsDraining != 1 || s.DestinationsDeleted != 0 {
		t.Fatalf("removing the busy backend: %v, want it drained", s)
	}
	p := procIPVS(t, lab.Node())["tcp "+vip.String()]
	if w, ok := p.dests[netip.AddrPortFrom(goneIP, 8080)]; !ok || w != 0 {
		t.Fatalf("draining real server: weight %d (present %v), want 0", w, ok)
	}
	for i := range 3 {
		if got, err := held.ask(); err != nil || got != gone {
			t.Fatalf("open connection, question %d: answered %q, %v; want %s", i, got, err, gone)
		}
	}
	counts, err := lab.Client().Spread(t.Context(), netlab.TCP, vip, 10)
	if err != nil || counts[gone] != 0 || counts[names[keptIP]] != 10 {
		t.Fatalf("new connections reached %v (%v); want all 10 on %s", counts, err, names[keptIP])
	}
	plans = mustPlan(t, c, desired)
	if cs := plans[0].Changes; !cs.Empty() || len(cs.Draining) != 1 || cs.Draining[0].Conns.Active == 0 {
		t.Fatalf("plan while draining: empty %v, draining %+v; want no change and one draining real server:\n%s",
			cs.Empty(), cs.Draining, planText(t, plans))
	}
	if n, err := c.WaitDrained(t.Context(), plans, 500*time.Millisecond); err == nil || n != 0 {
		t.Fatalf("WaitDrained with the connection open: deleted %d, %v; want a timeout", n, err)
	}
	held.reset()
	start := time.Now()
	n, err := c.WaitDrained(t.Context(), plans, 60*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("WaitDrained after the close: deleted %d, %v", n, err)
	}
	t.Logf("the drained real server was deleted %v after its connection was reset", time.Since(start).Round(100*time.Millisecond))
	p = procIPVS(t, lab.Node())["tcp "+vip.String()]
	if _, ok := p.dests[netip.AddrPortFrom(goneIP, 8080)]; ok || len(p.dests) != 1 {
		t.Errorf("after draining the kernel lists %v", p.dests)
	}
	requireEmpty(t, c, desired)
	// A plain apply also finishes a drain once the connections are gone.
	apply(t, c, renderTable(podTable(nodetable.TCP, podA, podB), "rr"))
	held2 := dialHeld(t, lab.Client(), vip)
	name, err := held2.ask()
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]netip.Addr{"a": podA, "b": podB}[name]
	keep := map[string]netip.Addr{"a": podB, "b": podA}[name]
	apply(t, c, renderTable(podTable(nodetable.TCP, keep), "rr"))
	held2.reset()
	deadline := time.Now().Add(60 * time.Second)
	for {
		plans := apply(t, c, renderTable(podTable(nodetable.TCP, keep), "rr"))
		if sc := plans[0].Changes.Services; len(sc) == 1 && sc[0].Dests[0].Verb == diff.IPVSDeleteDest {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apply never deleted the drained real server %s", drop)
		}
		time.Sleep(time.Second)
	}
}
