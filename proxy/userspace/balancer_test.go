package userspace

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

var (
	epA = netip.MustParseAddrPort("10.244.0.1:8080")
	epB = netip.MustParseAddrPort("10.244.0.2:8080")
	epC = netip.MustParseAddrPort("10.244.0.3:8080")

	client1 = netip.MustParseAddr("203.0.113.1")
	client2 = netip.MustParseAddr("203.0.113.2")
)

// fakeClock is a settable clock for affinity timeouts.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func picks(t *testing.T, b *balancer, client netip.Addr, n int) []netip.AddrPort {
	t.Helper()
	var out []netip.AddrPort
	for range n {
		ep, err := b.next(client, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ep)
	}
	return out
}

func TestBalancerRoundRobin(t *testing.T) {
	b := newBalancer(time.Now)
	if _, err := b.next(client1, false); err != ErrNoEndpoints {
		t.Fatalf("no endpoints: got %v, want ErrNoEndpoints", err)
	}
	b.update([]netip.AddrPort{epA, epB, epC}, 0)
	got := picks(t, b, client1, 9)
	// Each cycle of three hands out every endpoint once, in the same
	// (shuffled) order.
	for i := 0; i < 9; i += 3 {
		cycle := slices.Clone(got[i : i+3])
		slices.SortFunc(cycle, netip.AddrPort.Compare)
		if !slices.Equal(cycle, []netip.AddrPort{epA, epB, epC}) || !slices.Equal(got[i:i+3], got[:3]) {
			t.Fatalf("not round robin: %v", got)
		}
	}
	// The same set in another order changes nothing: the position is kept.
	next := got[0]
	b.update([]netip.AddrPort{epC, epB, epA}, 0)
	if ep, _ := b.next(client2, false); ep != next {
		t.Fatalf("an unchanged endpoint set restarted the round robin: got %v, want %v", ep, next)
	}
}

func TestBalancerAffinity(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	b := newBalancer(clk.now)
	b.update([]netip.AddrPort{epA, epB, epC}, 10)

	first := picks(t, b, client1, 1)[0]
	for range 5 {
		clk.t = clk.t.Add(9 * time.Second) // each use extends the affinity
		if ep := picks(t, b, client1, 1)[0]; ep != first {
			t.Fatalf("client1 moved from %v to %v within the timeout", first, ep)
		}
	}
	other := picks(t, b, client2, 1)[0]
	if other == first {
		t.Fatalf("client2 got client1's endpoint %v: affinity must not stop the round robin", other)
	}

	// A failed dial resets the client's affinity to the next endpoint.
	reset, _ := b.next(client1, true)
	if reset == first {
		t.Fatalf("resetAffinity gave the same endpoint %v", reset)
	}
	if ep := picks(t, b, client1, 1)[0]; ep != reset {
		t.Fatalf("after a reset client1 sticks to %v, want %v", ep, reset)
	}

	// Expiry: after the timeout the client takes its turn again.
	clk.t = clk.t.Add(10 * time.Second)
	b.sweep()
	if len(b.sticky) != 0 {
		t.Fatalf("sweep kept expired affinities: %v", b.sticky)
	}

	// Removing a client's endpoint forgets the client.
	ep := picks(t, b, client1, 1)[0]
	var rest []netip.AddrPort
	for _, e := range []netip.AddrPort{epA, epB, epC} {
		if e != ep {
			rest = append(rest, e)
		}
	}
	if changed, removed := b.update(rest, 10); !changed || !slices.Equal(removed, []netip.AddrPort{ep}) {
		t.Fatalf("update removed %v, want [%v]", removed, ep)
	}
	if got := picks(t, b, client1, 1)[0]; got == ep {
		t.Fatalf("client1 still sticks to removed endpoint %v", ep)
	}

	// Turning affinity off forgets every client.
	b.update(rest, 0)
	if len(b.sticky) != 0 {
		t.Fatalf("affinity off kept %d clients", len(b.sticky))
	}
}
