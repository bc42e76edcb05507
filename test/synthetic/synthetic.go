// Package synthetic builds large node-local service tables for benchmarks,
// directly rather than through snapshots, so that what is measured is the
// stage under test.
package synthetic

import (
	"fmt"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Table returns n ClusterIP Services with one TCP port and perService ready
// endpoints spread over ten nodes (the first one local); every tenth of the
// first 13,840 Services is a NodePort, 30000 + i modulo the 2768 ports of
// the default range (30000-32767): past that the ports would repeat, and an
// API server would refuse the Service. Endpoints live in 10.128.0.0/9.
func Table(n, perService int) *nodetable.ServiceTable {
	t := &nodetable.ServiceTable{
		Family: nodetable.IPv4,
		Node:   nodetable.Node{Name: "node1", IPs: []netip.Addr{netip.MustParseAddr("192.168.77.10")}},
	}
	for i := 0; i < n; i++ {
		sp := nodetable.ServicePort{
			Name:      nodetable.ServicePortName{Namespace: fmt.Sprintf("ns%d", i%50), Name: fmt.Sprintf("svc%d", i), Port: "http", Protocol: nodetable.TCP},
			ClusterIP: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}),
			Port:      80,
		}
		if i%10 == 0 && i < nodePortServices {
			sp.NodePort = int32(30000 + i%2768)
		}
		for j := 0; j < perService; j++ {
			sp.AllEndpoints = append(sp.AllEndpoints, Endpoint(i, j, perService))
		}
		SetEndpoints(&sp, sp.AllEndpoints)
		t.Ports = append(t.Ports, sp)
	}
	return t
}

// nodePortServices bounds the Services that get a NodePort: i and i+13840
// (both multiples of 10 and of 2768 apart five times) would share one.
const nodePortServices = 5 * 2768

// Endpoint returns endpoint j of Service i.
func Endpoint(i, j, perService int) nodetable.Endpoint {
	k := i*perService + j
	return nodetable.Endpoint{
		IP:       netip.AddrFrom4([4]byte{10, byte(128 + k>>16), byte(k >> 8), byte(k)}),
		Port:     8080,
		NodeName: fmt.Sprintf("node%d", j%10+1),
		Local:    j%10 == 0,
		Ready:    true, Serving: true,
	}
}

// SetEndpoints makes eps every category of ready endpoints of sp.
func SetEndpoints(sp *nodetable.ServicePort, eps []nodetable.Endpoint) {
	sp.AllEndpoints = eps
	sp.ClusterEndpoints = eps
	sp.ReachableEndpoints = eps
	sp.HasEndpoints = len(eps) > 0
}

// WithOneEndpointChanged returns a copy of t whose Service i has its last
// endpoint replaced by a new address.
func WithOneEndpointChanged(t *nodetable.ServiceTable, i, round int) *nodetable.ServiceTable {
	c := *t
	c.Ports = append([]nodetable.ServicePort(nil), t.Ports...)
	sp := &c.Ports[i]
	eps := append([]nodetable.Endpoint(nil), sp.AllEndpoints...)
	last := eps[len(eps)-1]
	last.IP = netip.AddrFrom4([4]byte{10, 127, byte(round >> 8), byte(round)})
	eps[len(eps)-1] = last
	SetEndpoints(sp, eps)
	return &c
}

// VariedTable is Table with the shapes that stress large element lists
// mixed in: every seventh Service from the second on has session
// affinity, from the third an external IP, from the fourth a load
// balancer with source ranges, and from the fifth no endpoints and a
// NodePort. It also has two Service CIDRs.
func VariedTable(n, perService int) *nodetable.ServiceTable {
	table := Table(n, perService)
	for i := range table.Ports {
		sp := &table.Ports[i]
		switch i % 7 {
		case 1:
			sp.AffinityTimeoutSeconds = 10800
		case 2:
			sp.ExternalIPs = []netip.Addr{netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})}
		case 3:
			sp.LoadBalancerVIPs = []netip.Addr{netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})}
			sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("192.168.77.0/24")}
		case 4:
			SetEndpoints(sp, nil)
			sp.NodePort = int32(31000 + i)
		}
	}
	table.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("10.97.0.0/16")}
	return table
}
