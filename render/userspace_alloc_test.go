package render

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func names(n int) []nodetable.ServicePortName {
	out := make([]nodetable.ServicePortName, n)
	for i := range out {
		out[i] = nodetable.ServicePortName{Namespace: fmt.Sprintf("ns%d", i%7), Name: fmt.Sprintf("svc%d", i), Port: "http", Protocol: nodetable.TCP}
	}
	return out
}

func mustAllocate(t *testing.T, ns []nodetable.ServicePortName, r ProxyPortRange, reserved []int32) map[nodetable.ServicePortName]uint16 {
	t.Helper()
	m, err := allocatePorts(ns, r, reserved)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A small range makes collisions common, so every property is exercised.
var small = ProxyPortRange{First: 40000, Last: 40499}

func TestAllocateDeterministicDistinctInRange(t *testing.T) {
	ns := names(300)
	m := mustAllocate(t, ns, small, nil)
	rev := slices.Clone(ns)
	slices.Reverse(rev)
	if m2 := mustAllocate(t, append(rev, ns[:10]...), small, nil); !maps.Equal(m, m2) {
		t.Error("allocation depends on input order or duplicates")
	}
	seen := map[uint16]bool{}
	for _, n := range ns {
		p, ok := m[n]
		if !ok || !small.Contains(int32(p)) || seen[p] {
			t.Fatalf("%s: port %d missing, out of %s or taken twice", n, p, small)
		}
		seen[p] = true
	}
}

func TestAllocateProtocolIsPartOfTheName(t *testing.T) {
	tcp := nodetable.ServicePortName{Namespace: "ns", Name: "dns", Port: "dns", Protocol: nodetable.TCP}
	udp := tcp
	udp.Protocol = nodetable.UDP
	m := mustAllocate(t, []nodetable.ServicePortName{tcp, udp}, ProxyPortRange{}, nil)
	if m[tcp] == m[udp] || !DefaultProxyPortRange.Contains(int32(m[tcp])) {
		t.Errorf("tcp %d, udp %d: want two distinct ports in %s", m[tcp], m[udp], DefaultProxyPortRange)
	}
}

// atHome reports whether n sits at its home port in m.
func atHome(m map[nodetable.ServicePortName]uint16, n nodetable.ServicePortName, r ProxyPortRange) bool {
	return m[n] == homeProxyPort(n, r)
}

func TestAllocateStableOnAdd(t *testing.T) {
	ns := names(300)
	before := mustAllocate(t, ns, small, nil)
	displaced := 0
	for i := 300; i < 400; i++ {
		added := nodetable.ServicePortName{Namespace: "new", Name: fmt.Sprintf("svc%d", i), Protocol: nodetable.UDP}
		after := mustAllocate(t, append(slices.Clone(ns), added), small, nil)
		for _, n := range ns {
			if !atHome(before, n, small) {
				continue
			}
			collides := homeProxyPort(added, small) == before[n] && proxyPortKey(added) < proxyPortKey(n)
			if after[n] != before[n] && !collides {
				t.Errorf("adding %s moved %s (at home) from %d to %d", added, n, before[n], after[n])
			}
		}
	}
	for _, n := range ns {
		if !atHome(before, n, small) {
			displaced++
		}
	}
	if displaced == 0 {
		t.Fatal("no collisions: the test range is too large to exercise probing")
	}
}

func TestAllocateStableOnDelete(t *testing.T) {
	ns := names(300)
	before := mustAllocate(t, ns, small, nil)
	for i := range ns {
		rest := slices.Delete(slices.Clone(ns), i, i+1)
		after := mustAllocate(t, rest, small, nil)
		for _, n := range rest {
			if atHome(before, n, small) && after[n] != before[n] {
				t.Fatalf("deleting %s moved %s (at home) from %d to %d", ns[i], n, before[n], after[n])
			}
		}
	}
}

// TestAllocateNoCollisionsNoMoves: with a range large enough that no two
// names share a home port, nothing ever moves.
func TestAllocateNoCollisionsNoMoves(t *testing.T) {
	ns := names(3)
	r := ProxyPortRange{First: 1, Last: 65535}
	m := mustAllocate(t, ns, r, nil)
	for _, n := range ns {
		if !atHome(m, n, r) {
			t.Fatalf("%s is not at its home port: three fixed names collide in 65535 ports, so the hash changed (or pick other names)", n)
		}
	}
	for i := range ns {
		rest := slices.Delete(slices.Clone(ns), i, i+1)
		for n, p := range mustAllocate(t, rest, r, nil) {
			if m[n] != p {
				t.Errorf("%s moved", n)
			}
		}
	}
}

func TestAllocateAvoidsReserved(t *testing.T) {
	ns := names(300)
	var reserved []int32
	for _, p := range mustAllocate(t, ns, small, nil) {
		if p%2 == 0 {
			reserved = append(reserved, int32(p))
		}
	}
	reserved = append(reserved, 30080, 0) // outside the range: ignored
	m := mustAllocate(t, ns, small, reserved)
	for n, p := range m {
		if slices.Contains(reserved, int32(p)) {
			t.Errorf("%s got reserved port %d", n, p)
		}
	}
}

func TestAllocateExhausted(t *testing.T) {
	r := ProxyPortRange{First: 100, Last: 109}
	ns := names(12)
	m, err := allocatePorts(ns, r, []int32{105})
	var ex *portsExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("err = %v, want *portsExhaustedError", err)
	}
	if len(m) != 9 || len(ex.Unallocated) != 3 {
		t.Errorf("%d allocated, %d unallocated; want 9 and 3", len(m), len(ex.Unallocated))
	}
	for _, n := range ex.Unallocated {
		if _, ok := m[n]; ok {
			t.Errorf("%s both allocated and reported unallocated", n)
		}
	}
	t.Log(err)
}

func TestParsePortRange(t *testing.T) {
	for in, want := range map[string]ProxyPortRange{
		"20000-29999": {20000, 29999},
		"20000+9999":  {20000, 29999},
		"8080":        {8080, 8080},
	} {
		if got, err := ParseProxyPortRange(in); err != nil || got != want {
			t.Errorf("ParseProxyPortRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0-10", "10-5", "1-70000", "60000+6000", "a-b", "-5"} {
		if _, err := ParseProxyPortRange(in); err == nil {
			t.Errorf("ParseProxyPortRange(%q): want an error", in)
		}
	}
}
