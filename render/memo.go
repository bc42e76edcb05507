package render

import (
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// What NFTablesRenderer and IPTablesRenderer share: when a port's memo
// holds (samePort), and what the whole render is keyed on (memoSetup).

// memoSetup is what a memo keys the whole render on: the table without
// its ports, and the configuration without the host's addresses. A pod
// coming or going adds or drops a veth's link-local address, and no
// port's rules read them; what does (the NodePort addresses they resolve
// to) is written outside the ports, at every render.
func memoSetup(t *nodetable.ServiceTable, cfg Config) string {
	whole := *t
	whole.Ports = nil
	cfg.HostAddresses = nil
	return fmt.Sprintf("%+v %+v", whole, cfg)
}

// samePort reports whether b is a, for the memo: equal values, and the
// very same lists (cluster.Builder's reused ports share them; a list
// built anew counts as changed, which only costs a render).
func samePort(a, b *nodetable.ServicePort) bool {
	return a.Name == b.Name && a.ClusterIP == b.ClusterIP && a.Port == b.Port && a.NodePort == b.NodePort &&
		a.HealthCheckNodePort == b.HealthCheckNodePort && a.AffinityTimeoutSeconds == b.AffinityTimeoutSeconds &&
		a.InternalPolicyLocal == b.InternalPolicyLocal && a.ExternalPolicyLocal == b.ExternalPolicyLocal &&
		a.HasEndpoints == b.HasEndpoints &&
		sameSlice(a.ExternalIPs, b.ExternalIPs) && sameSlice(a.LoadBalancerVIPs, b.LoadBalancerVIPs) &&
		sameSlice(a.LoadBalancerSourceRanges, b.LoadBalancerSourceRanges) &&
		sameSlice(a.AllEndpoints, b.AllEndpoints) && sameSlice(a.ClusterEndpoints, b.ClusterEndpoints) &&
		sameSlice(a.LocalEndpoints, b.LocalEndpoints) && sameSlice(a.ReachableEndpoints, b.ReachableEndpoints)
}

// sameSlice is true for two empty slices, or two that are one array's
// same elements.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
