package render

import (
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// NFTablesRenderer is NFTables for a caller that renders one family's
// table again and again (apply --watch): it remembers what each Service
// port rendered, and the next Render takes that over for every port that
// is the same as before, with the same configuration (host addresses
// aside, see memoSetup) and node, instead of writing its chains, rules
// and elements anew. A port is the same when
// its values are equal and its lists are the very same slices, which is
// what cluster.Builder hands out for a Service that did not change; ports
// built anew (from a hand-written file, say) are always rendered.
//
// Render gives exactly what NFTables gives. The chains it returns are
// shared with earlier and later results: the rulesets are read-only. The
// zero value is ready to use; it is not safe for concurrent use.
type NFTablesRenderer struct {
	setup string // the configuration and node the memo is for
	ports map[nodetable.ServicePortName]*nftPortOutput
	// sorted is what each shared set held before sortDedupe, and after,
	// in the last Render.
	sorted map[string]nftSorted
	// chains and sets count the last Render's chains and sets.
	chains, sets int
	// joined is each compact endpoint map's runs of keys and elements
	// in the last Render.
	joined map[int]nftJoined
}

type nftJoined struct {
	runs     []nftKeyRun
	elements []nft.Element
}

type nftSorted struct{ in, out []nft.Element }

// nftPortOutput is what one Service port rendered: the chains and sets it
// created, in order, and the elements it added to each of the table's
// shared sets (indexed as nftState.shared lists them).
type nftPortOutput struct {
	port     nodetable.ServicePort
	chains   []*nft.Chain
	sets     []*nft.Set
	elements [][]nft.Element
	offsets  []uint32 // its DNAT chains' offsets in the compact layout's maps
	// endpoints are the elements it added to the compact layout's maps.
	endpoints []nftKeyRun
}

// Render renders t with cfg, reusing the output of unchanged ports.
func (r *NFTablesRenderer) Render(t *nodetable.ServiceTable, cfg Config) *nft.Ruleset {
	s := newNFTState(t, &cfg)
	s.writeSkeleton()
	setup := memoSetup(t, cfg)
	prev := r.ports
	if setup != r.setup {
		prev = nil
	}
	next := make(map[nodetable.ServicePortName]*nftPortOutput, len(t.Ports))
	shared := s.shared()
	r.presize(s, shared)
	for i := range t.Ports {
		sp := &t.Ports[i]
		out := prev[sp.Name]
		offsets := s.portOffsets(sp)
		if out == nil || !samePort(&out.port, sp) || !slices.Equal(out.offsets, offsets) {
			out = s.recordServicePort(sp, shared)
			out.offsets = offsets
		} else {
			s.replay(out, shared)
		}
		next[sp.Name] = out
	}
	s.sortSetsWith(r.sorter(shared), r.joiner())
	r.setup, r.ports = setup, next
	r.chains, r.sets = len(s.rs.Chains), len(s.rs.Sets)
	return s.rs
}

// presize gives the table's lists the room that the last Render's took:
// growing them a port at a time copied them over and over, a sixth of a
// one-endpoint render at 10k Services.
func (r *NFTablesRenderer) presize(s *nftState, shared []*nft.Set) {
	s.rs.Chains = slices.Grow(s.rs.Chains, max(0, r.chains-len(s.rs.Chains)))
	s.rs.Sets = slices.Grow(s.rs.Sets, max(0, r.sets-len(s.rs.Sets)))
	for _, set := range shared {
		if set != nil {
			set.Elements = slices.Grow(set.Elements, len(r.sorted[set.Name].in))
		}
	}
}

// sorter returns the sort of Render: sortDedupe, except that a shared set
// given the same elements as in the last Render takes that Render's
// result. Sorting the table's large sets (every Service's address, say)
// was about half of rendering a one-endpoint change at 10k Services; the
// check is a comparison of strings that the memoized ports share, most
// of them by pointer. sortDedupe depends on nothing but the elements, so
// the result is the same whatever else changed.
func (r *NFTablesRenderer) sorter(shared []*nft.Set) func(*nft.Set) {
	prev := r.sorted
	r.sorted = make(map[string]nftSorted, len(shared))
	return func(set *nft.Set) {
		if !slices.Contains(shared, set) {
			sortDedupe(set)
			return
		}
		m, ok := prev[set.Name]
		if ok && slices.Equal(m.in, set.Elements) {
			set.Elements = m.out
		} else {
			m.in = slices.Clone(set.Elements)
			sortDedupe(set)
			m.out = set.Elements
		}
		r.sorted[set.Name] = m
	}
}

// shared lists the sets that every Service port adds elements to; a set
// the skeleton did not create is nil.
func (s *nftState) shared() []*nft.Set {
	return []*nft.Set{s.hairpin, s.clusterIPs, s.noEPServices, s.noEPNodePorts, s.firewallIPs, s.serviceIPs, s.serviceNodePorts}
}

// portOffsets lists the offsets of a port's DNAT chains in the compact
// layout (nil in kube-proxy's): a port whose chains moved in the shared
// map is written anew.
func (s *nftState) portOffsets(sp *nodetable.ServicePort) []uint32 {
	if s.offsets == nil {
		return nil
	}
	var out []uint32
	for _, tg := range nftDNATTargets(sp) {
		o, ok := s.offsets[nftDNATKey{sp.Name, tg.local}]
		if !ok {
			o = ^uint32(0) // no slot: an anonymous map
		}
		out = append(out, o)
	}
	return out
}

// recordServicePort writes one Service port and records what it wrote.
func (s *nftState) recordServicePort(sp *nodetable.ServicePort, shared []*nft.Set) *nftPortOutput {
	chains, sets := len(s.rs.Chains), len(s.rs.Sets)
	before := make([]int, len(shared))
	for i, set := range shared {
		if set != nil {
			before[i] = len(set.Elements)
		}
	}
	out := &nftPortOutput{port: *sp}
	s.recording = out
	s.writeServicePort(sp)
	s.recording = nil
	out.chains, out.sets = slices.Clone(s.rs.Chains[chains:]), slices.Clone(s.rs.Sets[sets:])
	out.elements = make([][]nft.Element, len(shared))
	for i, set := range shared {
		if set != nil {
			// A copy: sortDedupe reorders the set's own array.
			out.elements[i] = slices.Clone(set.Elements[before[i]:])
		}
	}
	return out
}

// replay adds what a port rendered before, in the order it was written.
func (s *nftState) replay(out *nftPortOutput, shared []*nft.Set) {
	s.rs.Chains = append(s.rs.Chains, out.chains...)
	s.rs.Sets = append(s.rs.Sets, out.sets...)
	for i, set := range shared {
		if set != nil {
			set.Elements = append(set.Elements, out.elements[i]...)
		}
	}
	for _, r := range out.endpoints {
		s.addEndpointKeys(r)
	}
}

// joiner returns the join of Render: joinRuns, except that a compact
// endpoint map whose runs of keys are the very runs of the last Render
// (every chain in it memoized) takes that Render's elements, the same
// slice, which the plan then finds unchanged without reading it.
func (r *NFTablesRenderer) joiner() func(i int, runs []nftKeyRun) []nft.Element {
	prev := r.joined
	r.joined = make(map[int]nftJoined, len(prev))
	return func(i int, runs []nftKeyRun) []nft.Element {
		j, ok := prev[i]
		if !ok || !sameRuns(j.runs, runs) {
			j = nftJoined{runs: runs, elements: joinRuns(i, runs)}
		}
		r.joined[i] = j
		return j.elements
	}
}

// sameRuns reports whether a and b are the same runs: the same offsets
// and the very same element slices.
func sameRuns(a, b []nftKeyRun) bool {
	return slices.EqualFunc(a, b, func(x, y nftKeyRun) bool {
		return x.offset == y.offset && len(x.elements) == len(y.elements) &&
			(len(x.elements) == 0 || &x.elements[0] == &y.elements[0])
	})
}
