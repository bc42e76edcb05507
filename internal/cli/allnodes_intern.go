package cli

import (
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// portInterner hands the renderers of --all-nodes the very same port
// value, endpoint lists included, for a port that another node or the
// other snapshot already had, equal in every field: the renderers' memos
// know a port by the identity of its lists (render.samePort), and
// cluster.Builder builds new lists for every node. A port a node sees
// differently (its local endpoints, its topology) is not equal, and is
// rendered anew.
type portInterner struct {
	seen map[nodetable.Family]map[nodetable.ServicePortName][]nodetable.ServicePort
}

// internKeep is how many values of one port the interner keeps: a changed
// Service alternates between OLD's and NEW's.
const internKeep = 4

func newPortInterner() *portInterner {
	return &portInterner{seen: map[nodetable.Family]map[nodetable.ServicePortName][]nodetable.ServicePort{}}
}

// intern replaces each port of the tables by an equal one seen before,
// and remembers the others. The tables' port lists are the caller's own
// (cluster.Builder makes them anew at every build).
func (in *portInterner) intern(tables *nodetable.Tables) {
	for _, t := range []*nodetable.ServiceTable{tables.IPv4, tables.IPv6} {
		seen := in.seen[t.Family]
		if seen == nil {
			seen = map[nodetable.ServicePortName][]nodetable.ServicePort{}
			in.seen[t.Family] = seen
		}
		for i := range t.Ports {
			p := &t.Ports[i]
			known := seen[p.Name]
			if j := slices.IndexFunc(known, func(k nodetable.ServicePort) bool { return equalPort(&k, p) }); j >= 0 {
				*p = known[j]
				continue
			}
			if len(known) == internKeep {
				known = known[1:]
			}
			seen[p.Name] = append(known, *p)
		}
	}
}

// equalPort reports whether a and b are equal in every field.
// TestEqualPortCoversEveryField holds it to ServicePort's fields.
func equalPort(a, b *nodetable.ServicePort) bool {
	return a.Name == b.Name && a.ClusterIP == b.ClusterIP && a.Port == b.Port && a.NodePort == b.NodePort &&
		a.HealthCheckNodePort == b.HealthCheckNodePort && a.AffinityTimeoutSeconds == b.AffinityTimeoutSeconds &&
		a.InternalPolicyLocal == b.InternalPolicyLocal && a.ExternalPolicyLocal == b.ExternalPolicyLocal &&
		a.HasEndpoints == b.HasEndpoints &&
		slices.Equal(a.ExternalIPs, b.ExternalIPs) && slices.Equal(a.LoadBalancerVIPs, b.LoadBalancerVIPs) &&
		slices.Equal(a.LoadBalancerSourceRanges, b.LoadBalancerSourceRanges) &&
		equalEndpoints(a.AllEndpoints, b.AllEndpoints) && equalEndpoints(a.ClusterEndpoints, b.ClusterEndpoints) &&
		equalEndpoints(a.LocalEndpoints, b.LocalEndpoints) && equalEndpoints(a.ReachableEndpoints, b.ReachableEndpoints)
}

// equalEndpoints is true for the very same list, which cluster.Builder
// hands over from node to node, without comparing it endpoint by endpoint.
func equalEndpoints(a, b []nodetable.Endpoint) bool {
	if len(a) == len(b) && len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	return slices.EqualFunc(a, b, equalEndpoint)
}

func equalEndpoint(a, b nodetable.Endpoint) bool {
	return a.IP == b.IP && a.Port == b.Port && a.NodeName == b.NodeName && a.Local == b.Local &&
		a.Ready == b.Ready && a.Serving == b.Serving && a.Terminating == b.Terminating &&
		slices.Equal(a.ZoneHints, b.ZoneHints) && slices.Equal(a.NodeHints, b.NodeHints)
}
