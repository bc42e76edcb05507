// Package ipvs traces a packet through ipvs mode's ruleset held as data
// (ruleset/ipvs): the helper chains and their ipsets (through
// trace/iptables), then, for a packet to a local address, the virtual
// server that matches it, its scheduler and its real servers, then
// postrouting's masquerade. Virtual server addresses are on kube-ipvs0,
// so they are the node's own: such packets go to INPUT.
package ipvs

import (
	"net/netip"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
)

// Evaluator is one family's ipvs ruleset, ready to trace.
type Evaluator struct {
	rs   *ipvs.Ruleset
	ipt  *tipt.Evaluator
	vs   map[vsKey]*ipvs.VirtualServer
	node *trace.Node
}

type vsKey struct {
	proto string
	addr  string
	port  uint16
}

// New loads rs on node n. It returns the node as ipvs mode makes it: with
// the kube-ipvs0 addresses among its own (as Service addresses).
func New(rs *ipvs.Ruleset, n *trace.Node) (*Evaluator, *trace.Node, error) {
	node := *n
	node.ServiceAddresses = append(append([]netip.Addr(nil), n.ServiceAddresses...), rs.Addresses...)
	sets := &ipsets{sets: map[string]*ipvs.Set{}}
	for _, s := range rs.Sets {
		sets.sets[s.Name] = s
	}
	ev := &Evaluator{rs: rs, vs: map[vsKey]*ipvs.VirtualServer{}, node: &node}
	for _, vs := range rs.VirtualServers {
		ev.vs[vsKey{string(vs.Protocol), vs.Address.String(), vs.Port}] = vs
	}
	if rs.IPTables != nil {
		var err error
		if ev.ipt, err = tipt.New(rs.IPTables, &node, tipt.Options{Mode: "ipvs", Sets: sets}); err != nil {
			return nil, nil, err
		}
	}
	return ev, &node, nil
}

// Mode names the mode.
func (ev *Evaluator) Mode() string { return "ipvs" }

// Hook runs the helper chains, then IPVS where it hooks in: at INPUT
// (LOCAL_IN, after filter) for packets to the node's addresses, and at
// OUTPUT (LOCAL_OUT) for the node's own. A packet IPVS translates at
// INPUT leaves again through POSTROUTING.
func (ev *Evaluator) Hook(h trace.Hook, st *trace.State) ([]*trace.State, error) {
	states := []*trace.State{st}
	if ev.ipt != nil {
		var err error
		if states, err = ev.ipt.Hook(h, st); err != nil {
			return nil, err
		}
	}
	if h != trace.Input && h != trace.Output {
		return states, nil
	}
	var out []*trace.State
	for _, s := range states {
		if s.Ended() || s.DNAT {
			out = append(out, s)
			continue
		}
		branches := ev.schedule(s)
		if h == trace.Input && ev.ipt != nil {
			for _, b := range branches {
				if !b.DNAT {
					out = append(out, b)
					continue
				}
				post, err := ev.ipt.Hook(trace.Postrouting, b)
				if err != nil {
					return nil, err
				}
				out = append(out, post...)
			}
			continue
		}
		out = append(out, branches...)
	}
	return out, nil
}

// schedule looks the virtual server up and forks the branch over its
// real servers, each with its share of the weights. A virtual server
// without a real server of positive weight leaves the packet to the node.
func (ev *Evaluator) schedule(s *trace.State) []*trace.State {
	vs := ev.vs[vsKey{s.Packet.Protocol, s.Packet.Dst.String(), s.Packet.Port}]
	if vs == nil {
		return []*trace.State{s}
	}
	s.Scheduler = vs.Scheduler
	if vs.Flags&ipvs.FlagPersistent != 0 {
		s.AffinitySeconds = int(vs.Timeout)
	}
	s.Record("ipvs", vs.Service(), vs.Line())
	var total float64
	var rss []ipvs.RealServer
	for _, r := range vs.RealServers {
		if r.Weight > 0 {
			total += float64(r.Weight)
			rss = append(rss, r)
		}
	}
	if len(rss) == 0 {
		// IPVS lets the packet through, untranslated, to the node's own
		// stack (where, on a node, nothing listens: refused).
		s.Record("ipvs", vs.Service(), "no real server of positive weight: not translated, delivered to the node")
		s.Touched = true
		return []*trace.State{s}
	}
	out := make([]*trace.State, 0, len(rss))
	left := total
	for i, r := range rss {
		b := s
		if i < len(rss)-1 {
			b = s.Fork(float64(r.Weight) / left)
		}
		left -= float64(r.Weight)
		b.Record("ipvs", vs.Service(), vs.RealServerLine(r)+" (weight "+strconv.Itoa(int(r.Weight))+")")
		b.SetDNAT(netip.AddrPortFrom(r.Address, r.Port))
		b.IPVS = true
		out = append(out, b)
	}
	return out
}
