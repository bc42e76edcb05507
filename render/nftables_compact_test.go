package render

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// keyRange is the keys one DNAT chain holds in the shared map.
type keyRange struct {
	key        nftDNATKey
	start, end uint64 // [start, end)
}

func keyRanges(t *nodetable.ServiceTable, offsets map[nftDNATKey]uint32) []keyRange {
	var out []keyRange
	for i := range t.Ports {
		for _, tg := range nftDNATTargets(&t.Ports[i]) {
			k := nftDNATKey{t.Ports[i].Name, tg.local}
			o, ok := offsets[k]
			if !ok {
				continue
			}
			out = append(out, keyRange{k, uint64(o), uint64(o) + uint64(len(tg.eps))})
		}
	}
	return out
}

// TestNFTOffsetsAreDisjoint checks that no two chains share a key, that
// every chain has an offset, and that a chain of more than a slot's
// endpoints takes the slots after its first.
func TestNFTOffsetsAreDisjoint(t *testing.T) {
	table := synthetic.VariedTable(3000, 3)
	big := &table.Ports[10]
	var eps []nodetable.Endpoint
	for j := range nftSlotSize + 100 {
		eps = append(eps, synthetic.Endpoint(100000, j, nftSlotSize+100))
	}
	synthetic.SetEndpoints(big, eps)
	big.LocalEndpoints = eps[:3]
	big.ExternalPolicyLocal = true

	offsets := assignNFTOffsets(table)
	ranges := keyRanges(table, offsets)
	targets := 0
	for i := range table.Ports {
		targets += len(nftDNATTargets(&table.Ports[i]))
	}
	if len(ranges) != targets || len(offsets) != targets {
		t.Fatalf("%d chains with an offset, %d ranges, of %d DNAT chains", len(offsets), len(ranges), targets)
	}
	slices.SortFunc(ranges, func(a, b keyRange) int { return int(a.start>>nftSlotBits) - int(b.start>>nftSlotBits) })
	for i, r := range ranges {
		if r.start%nftSlotSize != 0 {
			t.Errorf("%v: offset %d is not a slot's first key", r.key, r.start)
		}
		if i > 0 && ranges[i-1].end > r.start {
			t.Errorf("%v [%d, %d) overlaps %v [%d, %d)", ranges[i-1].key, ranges[i-1].start, ranges[i-1].end, r.key, r.start, r.end)
		}
	}
	bigKey := nftDNATKey{big.Name, false}
	if i := slices.IndexFunc(ranges, func(r keyRange) bool { return r.key == bigKey }); i < 0 || ranges[i].end-ranges[i].start != nftSlotSize+100 {
		t.Errorf("the %d-endpoint chain has no range of its size", nftSlotSize+100)
	}
	if _, ok := offsets[nftDNATKey{big.Name, true}]; !ok {
		t.Errorf("the local chain of %v has no offset", big.Name)
	}
}

// TestNFTOffsetsStayWhenServicesComeAndGo checks that a chain at its
// preferred slot keeps its keys when another Service is deleted and
// another added, so that neither rewrites its rule.
func TestNFTOffsetsStayWhenServicesComeAndGo(t *testing.T) {
	before := synthetic.Table(2000, 3)
	after := *before
	after.Ports = slices.Delete(slices.Clone(before.Ports), 700, 701)
	extra := synthetic.Table(2001, 3).Ports[2000]
	after.Ports = slices.Insert(after.Ports, 3, extra)
	a, b := assignNFTOffsets(before), assignNFTOffsets(&after)
	newSlot := nftPreferredSlot(extra.Name, false)
	atHome := 0
	for k, o := range a {
		home := nftPreferredSlot(k.port, k.local)
		if o != home<<nftSlotBits || home == newSlot || k.port == before.Ports[700].Name {
			continue
		}
		atHome++
		if b[k] != o {
			t.Errorf("%v moved from %d to %d", k.port, o, b[k])
		}
	}
	if atHome < 1900 {
		t.Errorf("only %d of 2000 chains at their preferred slot", atHome)
	}
}

// TestNFTOffsetsProbeInTableOrder puts two ports that prefer the same
// slot into a table in both orders: the first takes the slot, the
// second the next free one.
func TestNFTOffsetsProbeInTableOrder(t *testing.T) {
	x, y := collidingNames(t)
	port := func(n nodetable.ServicePortName, i int) nodetable.ServicePort {
		sp := nodetable.ServicePort{Name: n, ClusterIP: netip.AddrFrom4([4]byte{10, 96, 0, byte(i)}), Port: 80}
		synthetic.SetEndpoints(&sp, []nodetable.Endpoint{synthetic.Endpoint(i, 0, 1), synthetic.Endpoint(i, 1, 1)})
		return sp
	}
	home := nftPreferredSlot(x, false)
	for _, order := range [][2]nodetable.ServicePortName{{x, y}, {y, x}} {
		table := &nodetable.ServiceTable{Family: nodetable.IPv4, Ports: []nodetable.ServicePort{port(order[0], 1), port(order[1], 2)}}
		got := assignNFTOffsets(table)
		first, second := got[nftDNATKey{order[0], false}], got[nftDNATKey{order[1], false}]
		want := (home + 1) % nftSlotCount
		if first != home<<nftSlotBits || second != want<<nftSlotBits {
			t.Errorf("%v then %v: offsets %d and %d, want slots %d and %d", order[0].Name, order[1].Name, first, second, home, want)
		}
	}
	// A first port of more than a slot's endpoints takes two slots.
	big := port(x, 1)
	var eps []nodetable.Endpoint
	for j := range nftSlotSize + 1 {
		eps = append(eps, synthetic.Endpoint(1, j, nftSlotSize+1))
	}
	synthetic.SetEndpoints(&big, eps)
	table := &nodetable.ServiceTable{Family: nodetable.IPv4, Ports: []nodetable.ServicePort{big, port(y, 2)}}
	got := assignNFTOffsets(table)
	if want := (home + 2) % nftSlotCount; got[nftDNATKey{y, false}] != want<<nftSlotBits {
		t.Errorf("after a two-slot chain at slot %d: offset %d, want slot %d", home, got[nftDNATKey{y, false}], want)
	}
}

// collidingNames finds two port names that hash to the same slot.
func collidingNames(t *testing.T) (nodetable.ServicePortName, nodetable.ServicePortName) {
	seen := map[uint32]nodetable.ServicePortName{}
	for i := range 200000 {
		n := nodetable.ServicePortName{Namespace: "default", Name: fmt.Sprintf("s%d", i), Port: "http", Protocol: nodetable.TCP}
		s := nftPreferredSlot(n, false)
		if o, ok := seen[s]; ok {
			return o, n
		}
		seen[s] = n
	}
	t.Fatal("no two names share a slot")
	return nodetable.ServicePortName{}, nodetable.ServicePortName{}
}

func TestNFTFreeSlots(t *testing.T) {
	none := func(uint32) bool { return false }
	below := func(n uint32) func(uint32) bool { return func(s uint32) bool { return s < n } }
	for _, c := range []struct {
		name   string
		s, k   uint32
		taken  func(uint32) bool
		want   uint32
		wantOK bool
	}{
		{"free", 7, 1, none, 7, true},
		{"runs to the end", nftSlotCount - 2, 2, none, nftSlotCount - 2, true},
		{"wraps to the start", nftSlotCount - 1, 2, none, 0, true},
		{"passes taken slots", 0, 3, below(10), 10, true},
		{"keeps a chain in one map", nftSlotsPerMap - 1, 2, none, nftSlotsPerMap, true},
		{"passes taken slots into the next map", nftSlotsPerMap - 3, 2, below(nftSlotsPerMap - 1), nftSlotsPerMap, true},
		{"wraps past taken slots", nftSlotCount - 1, 1, func(s uint32) bool { return s >= nftSlotCount-1 || s < 5 }, 5, true},
		{"full", 3, 1, func(uint32) bool { return true }, 0, false},
		{"no run long enough", 0, nftSlotsPerMap + 1, none, 0, false},
	} {
		got, ok := nftFreeSlots(c.s, c.k, c.taken)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: got %d, %v; want %d, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

// TestNFTablesRendererFollowsMovedOffsets holds the memoizing renderer to
// NFTables in the compact layout while a port keeps its endpoints but
// not its keys: a port that prefers the same slot comes before it, takes
// the slot, and goes again.
func TestNFTablesRendererFollowsMovedOffsets(t *testing.T) {
	x, y := collidingNames(t)
	base := synthetic.Table(40, 3)
	withY := *base
	withY.Ports = slices.Clone(base.Ports)
	withY.Ports[30].Name = y
	withBoth := withY
	withBoth.Ports = slices.Clone(withY.Ports)
	withBoth.Ports[5].Name = x
	cfg := DefaultConfig()
	cfg.NFTablesLayout = NFTablesLayoutCompact
	var r NFTablesRenderer
	for i, table := range []*nodetable.ServiceTable{&withY, &withBoth, &withY} {
		if got, want := r.Render(table, cfg).String(), NFTables(table, cfg).String(); got != want {
			t.Fatalf("step %d: the memoizing renderer's table differs from NFTables'", i)
		}
	}
	if a, b := assignNFTOffsets(&withY), assignNFTOffsets(&withBoth); a[nftDNATKey{y, false}] == b[nftDNATKey{y, false}] {
		t.Fatalf("%v kept offset %d: the test moves nothing", y, a[nftDNATKey{y, false}])
	}
}

func TestNFTEndpointsMapName(t *testing.T) {
	for offset, want := range map[uint32]string{
		0:                                 "endpoint-addresses-00",
		1<<24 - 1:                         "endpoint-addresses-00",
		1 << 24:                           "endpoint-addresses-01",
		0xab << 24:                        "endpoint-addresses-ab",
		(nftSlotCount - 1) << nftSlotBits: "endpoint-addresses-ff",
	} {
		if got := nftEndpointsMapName(offset); got != want {
			t.Errorf("offset %#x: %s, want %s", offset, got, want)
		}
	}
}
