// Package conntrack removes stale UDP conntrack entries after the rules
// change, with kube-proxy v1.37's semantics: an entry whose original
// destination is a UDP Service's IP and port (or NodePort), but whose reply
// comes from an address that is no longer a serving endpoint, would keep
// sending packets to a removed pod for as long as the flow stays alive.
package conntrack

import (
	"net"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// staleFilter matches the UDP flows to delete for one family.
type staleFilter struct {
	// frontends maps a Service "ip:port" to its serving endpoints.
	frontends map[netip.AddrPort]map[netip.AddrPort]bool
	// nodePorts maps a NodePort to its serving endpoints.
	nodePorts map[uint16]map[netip.AddrPort]bool
}

// newStaleFilter collects the UDP frontends and serving endpoints of a table.
// Traffic policies, topology and terminating state are deliberately not
// considered, as in kube-proxy: existing flows to a serving endpoint stay.
func newStaleFilter(t *nodetable.ServiceTable) *staleFilter {
	f := &staleFilter{frontends: map[netip.AddrPort]map[netip.AddrPort]bool{}, nodePorts: map[uint16]map[netip.AddrPort]bool{}}
	for i := range t.Ports {
		sp := &t.Ports[i]
		if sp.Name.Protocol != nodetable.UDP {
			continue
		}
		serving := map[netip.AddrPort]bool{}
		for _, ep := range sp.AllEndpoints {
			if ep.Serving {
				serving[netip.AddrPortFrom(ep.IP, uint16(ep.Port))] = true
			}
		}
		port := uint16(sp.Port)
		f.frontends[netip.AddrPortFrom(sp.ClusterIP, port)] = serving
		for _, ip := range append(append([]netip.Addr{}, sp.LoadBalancerVIPs...), sp.ExternalIPs...) {
			f.frontends[netip.AddrPortFrom(ip, port)] = serving
		}
		// A NodePort is matched on the port alone; with no serving endpoint
		// that would delete unrelated flows, so kube-proxy skips it.
		if sp.NodePort != 0 && len(serving) > 0 {
			f.nodePorts[uint16(sp.NodePort)] = serving
		}
	}
	return f
}

func addrPort(ip net.IP, port uint16) netip.AddrPort {
	a, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a.Unmap(), port)
}

// Empty reports whether the table has no UDP frontend at all.
func (f *staleFilter) empty() bool { return len(f.frontends) == 0 && len(f.nodePorts) == 0 }
