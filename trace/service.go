package trace

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Source is one class of client of the service view.
type Source struct {
	// Class is "local pod", "remote pod", "node", "external" or, with
	// loadBalancerSourceRanges, "external allowed" and "external not allowed".
	Class   string     `json:"class"`
	Address netip.Addr `json:"address"`
	Via     Via        `json:"via"`
}

// EntryPoint is one address and port the Service answers on.
type EntryPoint struct {
	// Kind is ClusterIP, NodePort, LoadBalancer or ExternalIP.
	Kind    string `json:"kind"`
	Address string `json:"address"`
}

// Cell is the outcome of one source at one entry point.
type Cell struct {
	ServicePort string     `json:"servicePort"`
	Entry       EntryPoint `json:"entry"`
	Source      Source     `json:"source"`
	Verdict     Verdict    `json:"verdict"`
	// Endpoints are the addresses a DNAT reaches, sorted.
	Endpoints  []string `json:"endpoints"`
	Masquerade bool     `json:"masquerade"`
	Affinity   Affinity `json:"affinity"`
	DecidedBy  *Step    `json:"decidedBy,omitempty"`
	Note       string   `json:"note,omitempty"`
}

// ServiceView traces every entry point of a Service port against every
// source class: the reachability matrix.
func ServiceView(ev Evaluator, n *Node, sp *nodetable.ServicePort) ([]Cell, error) {
	proto := sp.Name.Protocol.Lower()
	var cells []Cell
	for _, ep := range EntryPoints(n, sp) {
		dst, err := netip.ParseAddrPort(ep.Address)
		if err != nil {
			return nil, err
		}
		for _, src := range Sources(n, sp) {
			if dst.Addr().IsLoopback() && src.Via != ViaNode {
				continue // only the node itself reaches its loopback
			}
			p := Packet{Src: src.Address, Dst: dst.Addr(), Port: dst.Port(), Protocol: proto}
			r, err := Run(ev, n, p, n.Force(src.Via))
			if err != nil {
				return nil, err
			}
			c := Cell{ServicePort: sp.Name.String(), Entry: ep, Source: src, Verdict: r.Verdict,
				Masquerade: r.Masquerade, Affinity: r.Affinity, DecidedBy: r.DecidedBy, Note: r.Note}
			for _, e := range r.Endpoints {
				c.Endpoints = append(c.Endpoints, e.Address)
			}
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// EntryPoints lists the ClusterIP, the NodePort on each node address
// (loopback included for IPv4), the load-balancer IPs and the external IPs.
func EntryPoints(n *Node, sp *nodetable.ServicePort) []EntryPoint {
	port := uint16(sp.Port)
	out := []EntryPoint{{Kind: "ClusterIP", Address: netip.AddrPortFrom(sp.ClusterIP, port).String()}}
	if sp.NodePort != 0 {
		addrs := append([]netip.Addr(nil), n.Addresses...)
		if sp.ClusterIP.Is4() {
			addrs = append(addrs, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
		}
		for _, a := range addrs {
			if a.Is4() == sp.ClusterIP.Is4() {
				out = append(out, EntryPoint{Kind: "NodePort", Address: netip.AddrPortFrom(a, uint16(sp.NodePort)).String()})
			}
		}
	}
	for _, a := range sp.LoadBalancerVIPs {
		out = append(out, EntryPoint{Kind: "LoadBalancer", Address: netip.AddrPortFrom(a, port).String()})
	}
	for _, a := range sp.ExternalIPs {
		out = append(out, EntryPoint{Kind: "ExternalIP", Address: netip.AddrPortFrom(a, port).String()})
	}
	return out
}

// Sources picks one address of each source class: a local pod, a pod on
// another node (when the cluster range is known), the node, and an
// outside client, split into allowed and not allowed when the Service has
// loadBalancerSourceRanges. Sample addresses avoid the Service's
// endpoints, so that hairpin traffic does not blur the view.
func Sources(n *Node, sp *nodetable.ServicePort) []Source {
	v4 := sp.ClusterIP.Is4()
	var out []Source
	if pod, ok := pickIn(n.PodCIDRs, v4, nil, sp); ok {
		out = append(out, Source{Class: "local pod", Address: pod, Via: ViaPod})
	}
	if remote, ok := pickIn(n.ClusterCIDRs, v4, n.PodCIDRs, sp); ok {
		out = append(out, Source{Class: "remote pod", Address: remote, Via: ViaExternal})
	}
	for _, a := range n.Addresses {
		if a.Is4() == v4 {
			out = append(out, Source{Class: "node", Address: a, Via: ViaNode})
			break
		}
	}
	outside := netip.MustParseAddr("198.51.100.77")
	if !v4 {
		outside = netip.MustParseAddr("2001:db8:5::77")
	}
	if len(sp.LoadBalancerSourceRanges) == 0 {
		return append(out, Source{Class: "external", Address: outside, Via: ViaExternal})
	}
	if in, ok := pickIn(sp.LoadBalancerSourceRanges, v4, nil, sp); ok {
		out = append(out, Source{Class: "external allowed", Address: in, Via: ViaExternal})
	}
	for contains(sp.LoadBalancerSourceRanges, outside) {
		outside = outside.Next()
	}
	return append(out, Source{Class: "external not allowed", Address: outside, Via: ViaExternal})
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// pickIn picks an address in the first prefix of the family that has one
// outside avoid and not an endpoint: counting down from the prefix's end.
func pickIn(ps []netip.Prefix, v4 bool, avoid []netip.Prefix, sp *nodetable.ServicePort) (netip.Addr, bool) {
	for _, p := range ps {
		if p.Addr().Is4() != v4 {
			continue
		}
		a := lastOf(p)
		for i := 0; i < 4096 && p.Contains(a); i++ {
			a = a.Prev()
			if p.Contains(a) && !contains(avoid, a) && !isEndpoint(sp, a) {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func isEndpoint(sp *nodetable.ServicePort, a netip.Addr) bool {
	for _, e := range sp.AllEndpoints {
		if e.IP == a {
			return true
		}
	}
	return false
}

// CellText is a cell's outcome in a few words, for the table.
func (c *Cell) CellText() string {
	s := string(c.Verdict)
	switch {
	case c.Verdict == DNAT:
		s += " " + strconv.Itoa(len(c.Endpoints)) + " endpoint(s)"
	case c.Note == NotAService:
		s += " (untouched)"
	}
	if c.Masquerade {
		s += ", masquerade"
	}
	return s
}

// ServiceTable is the service view as an aligned text table, one line per
// entry point and source.
func ServiceTable(cells []Cell) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE PORT\tENTRY POINT\tSOURCE\tOUTCOME\tENDPOINTS")
	for _, c := range cells {
		eps := strings.Join(c.Endpoints, ",")
		if c.DecidedBy != nil {
			eps = "by " + c.DecidedBy.Table + " " + c.DecidedBy.Chain
		}
		if eps == "" {
			eps = "-"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s %s\t%s\t%s\n", c.ServicePort, c.Entry.Kind, c.Entry.Address,
			c.Source.Class, c.Source.Address, c.CellText(), eps)
	}
	tw.Flush()
	return b.String()
}
