package healthcheck

import (
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// ServiceName is a Service's namespace and name.
type ServiceName struct {
	Namespace, Name string
}

func (n ServiceName) String() string { return n.Namespace + "/" + n.Name }

// ServiceCheck is what one family's table asks of one Service's health
// check: its port, and the count the check reports.
type ServiceCheck struct {
	Port uint16
	// LocalEndpoints is the number of distinct addresses of the Service's
	// ready endpoints on this node, over all its ports.
	LocalEndpoints int
}

// ServiceChecks returns the health checks that one family's table asks
// for: one per Service with a health check node port (cluster.Build sets
// it only for a LoadBalancer with externalTrafficPolicy Local), with
// kube-proxy's count of local endpoints (LocalReadyEndpoints): the ready
// ones only, so that a node whose endpoints are all terminating fails the
// check even while they still serve, counted by address, so that one Pod
// behind two ports counts once.
//
// kube-proxy counts over every port of the Service's EndpointSlices, and
// this over the ports of the Service: they differ only while a slice
// names a port the Service no longer has.
func ServiceChecks(t *nodetable.ServiceTable) map[ServiceName]ServiceCheck {
	checks := map[ServiceName]ServiceCheck{}
	seen := map[ServiceName][]netip.Addr{}
	for i := range t.Ports {
		sp := &t.Ports[i]
		if sp.HealthCheckNodePort <= 0 || sp.HealthCheckNodePort > 65535 {
			continue
		}
		name := ServiceName{Namespace: sp.Name.Namespace, Name: sp.Name.Name}
		ips := seen[name]
		for _, ep := range sp.AllEndpoints {
			if ep.Local && ep.Ready && !slices.Contains(ips, ep.IP) {
				ips = append(ips, ep.IP)
			}
		}
		seen[name] = ips
		checks[name] = ServiceCheck{Port: uint16(sp.HealthCheckNodePort), LocalEndpoints: len(ips)}
	}
	return checks
}

// Listen says where one family's health checks listen: on every address
// of the family (All, kube-proxy's default), or on each of IPs.
type Listen struct {
	All bool
	IPs []netip.Addr
}

func (l Listen) equal(o Listen) bool {
	return l.All == o.All && slices.Equal(l.IPs, o.IPs)
}

// addresses are the host:port addresses to listen on for port, with the
// network that keeps each listener to its family (a wildcard "tcp6"
// socket is IPv6-only).
func (l Listen) addresses(f nodetable.Family, port uint16) (network string, addrs []string) {
	network = "tcp4"
	wildcard := netip.IPv4Unspecified()
	if f == nodetable.IPv6 {
		network, wildcard = "tcp6", netip.IPv6Unspecified()
	}
	ips := l.IPs
	if l.All {
		ips = []netip.Addr{wildcard}
	}
	for _, ip := range ips {
		addrs = append(addrs, netip.AddrPortFrom(ip, port).String())
	}
	return network, addrs
}
