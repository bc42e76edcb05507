// Package userspace traces a packet through userspace mode's ruleset held
// as data (ruleset/userspace): the portal rules (through trace/iptables)
// redirect a Service address to a proxy port on the node; the proxy
// listening there then opens its own connection to one endpoint, chosen
// round robin (or by ClientIP affinity), from the node's address.
package userspace

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
)

// Evaluator is one family's userspace ruleset, ready to trace.
type Evaluator struct {
	rs    *userspace.Ruleset
	ipt   *tipt.Evaluator
	node  *trace.Node
	ports map[portKey]*userspace.Port
}

type portKey struct {
	proto string
	port  uint16
}

// New loads rs on node n.
func New(rs *userspace.Ruleset, n *trace.Node) (*Evaluator, error) {
	ev := &Evaluator{rs: rs, node: n, ports: map[portKey]*userspace.Port{}}
	for i := range rs.Ports {
		p := &rs.Ports[i]
		ev.ports[portKey{p.Name.Protocol.Lower(), p.ProxyPort}] = p
	}
	if rs.IPTables != nil {
		var err error
		if ev.ipt, err = tipt.New(rs.IPTables, n, tipt.Options{Mode: "userspace"}); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// Mode names the mode.
func (ev *Evaluator) Mode() string { return "userspace" }

// Hook runs the portal rules; at INPUT, a packet for a proxy port reaches
// the proxy.
func (ev *Evaluator) Hook(h trace.Hook, st *trace.State) ([]*trace.State, error) {
	states := []*trace.State{st}
	if ev.ipt != nil {
		var err error
		if states, err = ev.ipt.Hook(h, st); err != nil {
			return nil, err
		}
	}
	if h != trace.Input {
		return states, nil
	}
	var out []*trace.State
	for _, s := range states {
		out = append(out, ev.proxy(s)...)
	}
	return out, nil
}

// proxy hands a packet for a proxy port to the proxy: it connects to each
// endpoint in turn (1/n each), from the node, so the endpoint sees the
// node's address. A port without endpoints has no socket: refused.
func (ev *Evaluator) proxy(s *trace.State) []*trace.State {
	if s.Ended() || !s.DNAT {
		return []*trace.State{s}
	}
	p := ev.ports[portKey{s.Packet.Protocol, s.Packet.Port}]
	if p == nil || !ev.listens(s.Packet.Dst) {
		return []*trace.State{s}
	}
	s.ProxyPort = strconv.Itoa(int(p.ProxyPort))
	s.AffinitySeconds = int(p.AffinityTimeoutSeconds)
	chain := "proxy port " + s.ProxyPort
	if len(p.Endpoints) == 0 {
		s.Record("userspace", chain, p.Name.String()+" has no endpoints: the proxy has no socket, the node refuses")
		s.End(trace.Reject)
		return []*trace.State{s}
	}
	eps := make([]string, len(p.Endpoints))
	for i, e := range p.Endpoints {
		eps[i] = e.String()
	}
	s.Record("userspace", chain, p.Name.String()+" -> "+strings.Join(eps, ","))
	out := make([]*trace.State, 0, len(p.Endpoints))
	for i, e := range p.Endpoints {
		b := s
		if i < len(p.Endpoints)-1 {
			b = s.Fork(1 / float64(len(p.Endpoints)-i))
		}
		b.Record("userspace", chain, "connect from the node to "+e.String())
		b.SetDNAT(e)
		b.Masquerade = true
		out = append(out, b)
	}
	return out
}

// listens reports whether the proxy's sockets are bound where the packet
// goes: --bind-address, or every address.
func (ev *Evaluator) listens(a netip.Addr) bool {
	return !ev.rs.ListenIP.IsValid() || ev.rs.ListenIP.IsUnspecified() || ev.rs.ListenIP == a
}
