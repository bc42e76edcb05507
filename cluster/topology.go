package cluster

import (
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Topology modes, spelled as the trafficDistribution values they come from.
const (
	topologyNone           = ""
	topologyPreferSameNode = "PreferSameNode"
	topologyPreferSameZone = "PreferSameZone"
)

// categorize fills in sp's ClusterEndpoints, LocalEndpoints,
// ReachableEndpoints and HasEndpoints from sp.AllEndpoints, with the rules of
// kube-proxy v1.37's CategorizeEndpoints (pkg/proxy/topology.go):
//
//   - Cluster endpoints are the ready endpoints the topology mode allows;
//     when there are none, every serving and terminating endpoint.
//   - Local endpoints are the local ready endpoints; when there are none,
//     the local serving and terminating ones.
//   - Reachable endpoints are those of the policies in use, their union when
//     both are and topology or the terminating fallback narrowed them apart.
//
// kube-proxy leaves the union in map order; it is sorted here.
func categorize(sp *nodetable.ServicePort, nodeName, zone string) {
	sp.ClusterEndpoints, sp.LocalEndpoints, sp.ReachableEndpoints, sp.HasEndpoints = nil, nil, nil, false
	eps := sp.AllEndpoints
	if len(eps) == 0 {
		return
	}
	mode := topologyNone
	if sp.UsesClusterEndpoints() {
		mode = topologyMode(eps, nodeName, zone)
		sp.ClusterEndpoints = filterEndpoints(eps, func(ep *nodetable.Endpoint) bool {
			return ep.Ready && availableForTopology(ep, mode, nodeName, zone)
		})
		if len(sp.ClusterEndpoints) == 0 {
			sp.ClusterEndpoints = filterEndpoints(eps, servingTerminating)
		}
		sp.HasEndpoints = len(sp.ClusterEndpoints) > 0
	}
	if !sp.UsesLocalEndpoints() {
		sp.ReachableEndpoints = sp.ClusterEndpoints
		return
	}

	var localReady, localServingTerminating bool
	for i := range eps {
		ep := &eps[i]
		switch {
		case ep.Ready:
			sp.HasEndpoints = true
			localReady = localReady || ep.Local
		case servingTerminating(ep):
			sp.HasEndpoints = true
			localServingTerminating = localServingTerminating || ep.Local
		}
	}
	usedTerminating := false
	switch {
	case localReady:
		sp.LocalEndpoints = filterEndpoints(eps, func(ep *nodetable.Endpoint) bool { return ep.Local && ep.Ready })
	case localServingTerminating:
		usedTerminating = true
		sp.LocalEndpoints = filterEndpoints(eps, func(ep *nodetable.Endpoint) bool { return ep.Local && servingTerminating(ep) })
	}

	switch {
	case !sp.UsesClusterEndpoints():
		sp.ReachableEndpoints = sp.LocalEndpoints
	case mode == topologyNone && !usedTerminating:
		// Every local endpoint is also a cluster endpoint.
		sp.ReachableEndpoints = sp.ClusterEndpoints
	default:
		sp.ReachableEndpoints = unionEndpoints(sp.ClusterEndpoints, sp.LocalEndpoints)
	}
}

func servingTerminating(ep *nodetable.Endpoint) bool { return ep.Serving && ep.Terminating }

// topologyMode is kube-proxy's topologyModeFromHints: a mode applies when
// every ready endpoint carries hints of that kind and at least one names
// this node (or zone). Same-node hints win over same-zone hints.
func topologyMode(eps []nodetable.Endpoint, nodeName, zone string) string {
	hasReady := false
	allNodeHints, forNode := true, false
	allZoneHints, forZone := true, false
	for i := range eps {
		ep := &eps[i]
		if !ep.Ready {
			continue
		}
		hasReady = true
		if len(ep.NodeHints) == 0 {
			allNodeHints = false
		} else if slices.Contains(ep.NodeHints, nodeName) {
			forNode = true
		}
		if len(ep.ZoneHints) == 0 {
			allZoneHints = false
		} else if slices.Contains(ep.ZoneHints, zone) {
			forZone = true
		}
	}
	switch {
	case !hasReady:
		return topologyNone
	case allNodeHints && forNode:
		return topologyPreferSameNode
	case allZoneHints && forZone:
		return topologyPreferSameZone
	}
	return topologyNone
}

func availableForTopology(ep *nodetable.Endpoint, mode, nodeName, zone string) bool {
	switch mode {
	case topologyPreferSameNode:
		return slices.Contains(ep.NodeHints, nodeName)
	case topologyPreferSameZone:
		return slices.Contains(ep.ZoneHints, zone)
	}
	return true
}

// filterEndpoints keeps the order of eps, so its result stays sorted.
// When it keeps every endpoint, as it mostly does, it returns eps itself
// rather than a copy: the lists of a table are read-only, and at 10k
// Services the copies were one more copy of every endpoint in memory.
func filterEndpoints(eps []nodetable.Endpoint, keep func(*nodetable.Endpoint) bool) []nodetable.Endpoint {
	// By index: with slices.IndexFunc, each endpoint was copied and the
	// copy escaped to the heap, a tenth of building a 10k table.
	kept := 0
	for kept < len(eps) && keep(&eps[kept]) {
		kept++
	}
	if kept == len(eps) && len(eps) > 0 {
		return eps
	}
	var out []nodetable.Endpoint
	for i := range eps {
		if keep(&eps[i]) {
			out = append(out, eps[i])
		}
	}
	return out
}

// unionEndpoints merges two sorted lists by String(), without duplicates.
func unionEndpoints(a, b []nodetable.Endpoint) []nodetable.Endpoint {
	out := slices.Clone(a)
	for _, ep := range b {
		if !slices.ContainsFunc(out, func(x nodetable.Endpoint) bool { return x.String() == ep.String() }) {
			out = append(out, ep)
		}
	}
	sortEndpoints(out)
	return out
}
