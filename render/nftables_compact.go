package render

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The compact layout keeps the endpoint addresses of the table in named
// maps, endpoint-addresses-00 to -ff, and a service chain picks among its
// own with
//
//	meta l4proto tcp dnat ip to numgen random mod 3 offset 40960 map @endpoint-addresses-00
//
// where endpoint i of the chain is the map's key offset+i. kube-proxy's
// layout writes the endpoints into an anonymous map of the rule instead.
// The kernel walks a table's list of sets to create or find a set, so a
// table of N such maps costs it time in N². One map for all would cost
// it N² too: binding a rule to a map walks the map's elements and the
// rules already bound to it, and adding an element walks those rules.
// So the keys are cut into 256 maps by their top byte, and a table of N
// Services costs the kernel about N²/256 for these walks.
//
// A change of endpoint addresses, the count unchanged, is a change of map
// elements only: the kernel validates a table's chains when a rule with a
// nat or lookup expression changes, not when a data map's elements do.
const (
	nftEndpointAddresses = "endpoint-addresses-"
	nftEndpointsComment  = "endpoint addresses that the service chains pick among, from their offset on"

	// A chain's offset is a slot number times nftSlotSize: a slot holds
	// the endpoints of one chain, and a chain with more than nftSlotSize
	// endpoints takes several slots in a row. The key is numgen's 32-bit
	// integer, so there are 2^20 slots, 4096 to each of the 256 maps; a
	// chain's slots are all in one map.
	nftSlotBits      = 12
	nftSlotSize      = 1 << nftSlotBits
	nftSlotCount     = 1 << (32 - nftSlotBits)
	nftMapCount      = 256
	nftSlotsPerMap   = nftSlotCount / nftMapCount
	nftOffsetMapBits = 24 // an offset's top byte is its map's number
)

// nftEndpointsMapName names the map that holds the keys of an offset.
func nftEndpointsMapName(offset uint32) string {
	const hex = "0123456789abcdef"
	m := offset >> nftOffsetMapBits
	return nftEndpointAddresses + string([]byte{hex[m>>4], hex[m&15]})
}

// nftDNATKey names one chain that DNATs to endpoints: a Service port's
// service- chain, or its local- chain.
type nftDNATKey struct {
	port  nodetable.ServicePortName
	local bool
}

// nftDNATTarget is one chain that writeDNAT fills, with its endpoints.
type nftDNATTarget struct {
	local bool
	eps   []nodetable.Endpoint
}

// nftUsesCluster and nftUsesLocal say whether a port has a service- and
// a local- chain with endpoints to pick from.
func nftUsesCluster(sp *nodetable.ServicePort) bool {
	return len(sp.ClusterEndpoints) > 0 && sp.UsesClusterEndpoints()
}

func nftUsesLocal(sp *nodetable.ServicePort) bool {
	return len(sp.LocalEndpoints) > 0 && sp.UsesLocalEndpoints()
}

// nftDNATTargets lists the chains of a port that pick an endpoint by
// numgen without affinity, as writeServicePort writes them.
func nftDNATTargets(sp *nodetable.ServicePort) []nftDNATTarget {
	if sp.SessionAffinity() {
		return nil
	}
	var out []nftDNATTarget
	if nftUsesCluster(sp) {
		out = append(out, nftDNATTarget{false, sp.ClusterEndpoints})
	}
	if nftUsesLocal(sp) {
		out = append(out, nftDNATTarget{true, sp.LocalEndpoints})
	}
	return out
}

// assignNFTOffsets gives every DNAT chain of the table its offset in the
// shared maps; a chain left without one (no free slots) DNATs through an
// anonymous map, as in kube-proxy's layout. A chain's first choice of
// slot is a hash of its port's name, so that it keeps its keys while
// other Services come and go; a taken slot passes it on to the next free
// run of slots, in table order. The assignment depends on the table
// alone.
func assignNFTOffsets(t *nodetable.ServiceTable) map[nftDNATKey]uint32 {
	out := make(map[nftDNATKey]uint32)
	used := make([]uint64, nftSlotCount/64)
	taken := func(s uint32) bool { return used[s/64]&(1<<(s%64)) != 0 }
	for i := range t.Ports {
		sp := &t.Ports[i]
		for _, tg := range nftDNATTargets(sp) {
			k := uint32((len(tg.eps) + nftSlotSize - 1) / nftSlotSize)
			s, ok := nftFreeSlots(nftPreferredSlot(sp.Name, tg.local), k, taken)
			if !ok {
				continue // writeSharedDNAT falls back to an anonymous map
			}
			for j := s; j < s+k; j++ {
				used[j/64] |= 1 << (j % 64)
			}
			out[nftDNATKey{sp.Name, tg.local}] = s << nftSlotBits
		}
	}
	return out
}

// nftFreeSlots finds the first run of k free slots from slot s on, all in
// one map, wrapping at the end once; false when there is none (a table of
// more than a million DNAT chains, or of more than 4096 slots' endpoints).
func nftFreeSlots(s, k uint32, taken func(uint32) bool) (uint32, bool) {
	wrapped := false
	for {
		if s+k > nftSlotCount {
			if wrapped {
				return 0, false
			}
			s, wrapped = 0, true
			continue
		}
		if s/nftSlotsPerMap != (s+k-1)/nftSlotsPerMap {
			s = (s/nftSlotsPerMap + 1) * nftSlotsPerMap // the next map's first
			continue
		}
		free := true
		for j := s; j < s+k; j++ {
			if taken(j) {
				free, s = false, j+1
				break
			}
		}
		if free {
			return s, true
		}
	}
}

// nftPreferredSlot hashes a port's name (FNV-1a) into a slot number.
func nftPreferredSlot(n nodetable.ServicePortName, local bool) uint32 {
	h := uint32(2166136261)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint32(s[i])) * 16777619
		}
		h *= 16777619 // a zero byte between the parts
	}
	add(n.Namespace)
	add(n.Name)
	add(n.Port)
	add(string(n.Protocol))
	if local {
		add("local")
	}
	return h >> nftSlotBits
}

// writeSharedDNAT is the compact layout's DNAT: one rule that draws among
// the chain's keys in its shared map, and the chain's endpoints as the
// map's elements.
func (s *nftState) writeSharedDNAT(p *nftPlan, chain string, local bool, eps []nodetable.Endpoint) {
	offset, ok := s.offsets[nftDNATKey{p.sp.Name, local}]
	if !ok {
		s.writeMapDNAT(p, chain, eps)
		return
	}
	m := s.endpoints[offset>>nftOffsetMapBits]
	rule := "meta l4proto " + p.proto + " dnat " + s.ipX + " to numgen random mod " + strconv.Itoa(len(eps))
	if offset != 0 {
		rule += " offset " + strconv.FormatUint(uint64(offset), 10)
	}
	s.rule(chain, rule+" map @"+m.Name)
	els := make([]nft.Element, len(eps))
	for i, ep := range eps {
		key := strconv.FormatUint(uint64(offset)+uint64(i), 10)
		els[i] = nft.Element{Key: key, Value: ep.IP.String() + " . " + strconv.Itoa(int(ep.Port))}
	}
	s.addEndpointKeys(nftKeyRun{offset, els})
	if s.recording != nil {
		s.recording.endpoints = append(s.recording.endpoints, nftKeyRun{offset, els})
	}
}

// nftKeyRun is the elements of one chain in a shared map: the keys
// offset, offset+1, ... in order.
type nftKeyRun struct {
	offset   uint32
	elements []nft.Element
}

// addEndpointKeys keeps a chain's elements for fillEndpointsMaps.
func (s *nftState) addEndpointKeys(r nftKeyRun) {
	s.keyRuns[r.offset>>nftOffsetMapBits] = append(s.keyRuns[r.offset>>nftOffsetMapBits], r)
}

// fillEndpointsMaps gives each shared map its elements, in the order
// SortElements would put them: the chains' runs of keys do not overlap,
// so sorting the runs by offset sorts the keys, at the cost of sorting
// one run per chain rather than one element per endpoint. join (joinRuns,
// or the memoizing renderer's) makes map i's elements of its sorted runs.
func (s *nftState) fillEndpointsMaps(join func(i int, runs []nftKeyRun) []nft.Element) {
	for i, m := range s.endpoints {
		runs := s.keyRuns[i]
		if m == nil || len(runs) == 0 {
			continue
		}
		slices.SortFunc(runs, func(a, b nftKeyRun) int { return cmp.Compare(a.offset, b.offset) })
		m.Elements = join(i, runs)
	}
}

// joinRuns returns the elements of runs, one after the other.
func joinRuns(_ int, runs []nftKeyRun) []nft.Element {
	n := 0
	for _, r := range runs {
		n += len(r.elements)
	}
	out := make([]nft.Element, 0, n)
	for _, r := range runs {
		out = append(out, r.elements...)
	}
	return out
}

// writeEndpointsMaps assigns the compact layout's offsets and declares
// the shared maps that they use, in order.
func (s *nftState) writeEndpointsMaps() {
	if s.cfg.NFTablesLayout != NFTablesLayoutCompact {
		return
	}
	s.offsets = assignNFTOffsets(s.t)
	s.endpoints = make([]*nft.Set, nftMapCount)
	s.keyRuns = make([][]nftKeyRun, nftMapCount)
	for _, o := range s.offsets {
		if m := o >> nftOffsetMapBits; s.endpoints[m] == nil {
			s.endpoints[m] = &nft.Set{Name: nftEndpointsMapName(o), Type: "numgen random mod 1",
				DataType: s.ipX + " daddr . th dport", Typeof: true, Comment: nftEndpointsComment}
		}
	}
	for _, m := range s.endpoints {
		if m != nil {
			s.rs.Sets = append(s.rs.Sets, m)
		}
	}
}
