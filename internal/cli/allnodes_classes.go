package cli

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// Which nodes --all-nodes plans once for all. In iptables mode two nodes
// get byte-identical tables to render, as far as render.IPTables reads
// them, in a snapshot where
//   - neither is named by an endpoint (nodeName) of a Service whose
//     external or internal traffic policy is Local, nor by any endpoint's
//     forNodes hint: cluster.Build marks endpoints local by their
//     nodeName, and categorizes them by that mark only for such Services
//     (LocalEndpoints), and by node name only through forNodes hints;
//     elsewhere the mark stays on endpoints, which IPTables does not read;
//   - they are in the same zone, when some endpoint has a forZones hint
//     (without one, the zone decides nothing);
//   - render.IPTablesNodeKey is the same for both: all that IPTables reads
//     of the node itself.
// Nodes that agree so in NEW and in OLD (or are both missing from OLD)
// have the same desired and live rules, so the same plan: one of them is
// planned for all. A node named by such an endpoint or hint is planned
// on its own. Other modes read more of the node (nftables' and ipvs'
// hairpin sets list every local endpoint, nftables' NodePort rules the
// node's address): each node is planned there.

// nodeClasses gives the nodes to plan (reps) and, for each node, the
// index in reps of the one whose plan is its own.
func (o *PlanOptions) nodeClasses(newSnap, oldSnap *cluster.Snapshot, nodes []string) (reps []string, classOf []int, err error) {
	classOf = make([]int, len(nodes))
	if o.proxy.settings.mode != ModeIPTables {
		for i := range nodes {
			classOf[i] = i
		}
		return nodes, classOf, nil
	}
	views := make([]*fleetView, 2)
	for i, snap := range []*cluster.Snapshot{newSnap, oldSnap} {
		if views[i], err = newFleetView(snap, &o.proxy.settings); err != nil {
			return nil, nil, err
		}
	}
	first := map[string]int{}
	for i, node := range nodes {
		var key strings.Builder
		for _, v := range views {
			k, warnings, err := v.key(node, &o.proxy.settings)
			if err != nil {
				return nil, nil, err
			}
			for _, w := range warnings {
				o.warnOnceLocked(fmt.Sprint(w))
			}
			key.WriteString(k + "\n")
		}
		k := key.String()
		if _, ok := first[k]; !ok {
			first[k] = len(reps)
			reps = append(reps, node)
		}
		classOf[i] = first[k]
	}
	return reps, classOf, nil
}

// fleetView is what one snapshot says of every node, for nodeClasses.
type fleetView struct {
	// nodes is the snapshot without its Services and EndpointSlices:
	// building it for a node gives the node's own part of the tables.
	nodes *cluster.Snapshot
	// alone are the nodes named by an endpoint of a Service with a Local
	// traffic policy, or by a forNodes hint.
	alone map[string]bool
	// zones is set when some endpoint has a forZones hint.
	zones bool
	// ports are one node's ports, whose source ranges the key reads;
	// those do not depend on the node.
	ports *nodetable.Tables
}

func newFleetView(snap *cluster.Snapshot, s *renderSettings) (*fleetView, error) {
	v := &fleetView{nodes: &cluster.Snapshot{Nodes: snap.Nodes, ServiceCIDRs: snap.ServiceCIDRs}, alone: map[string]bool{}}
	cfg := s.cluster
	if len(snap.Nodes) > 0 {
		cfg.NodeName = snap.Nodes[0].Name
	}
	tables, _, err := cluster.Build(snap, cfg)
	if err != nil {
		return nil, err
	}
	v.ports = tables
	local := map[string]bool{}
	for i := range snap.Services {
		svc := &snap.Services[i]
		etp, itp := svc.Spec.ExternalTrafficPolicy, svc.Spec.InternalTrafficPolicy
		if etp == corev1.ServiceExternalTrafficPolicyLocal || (itp != nil && *itp == corev1.ServiceInternalTrafficPolicyLocal) {
			local[svc.Namespace+"/"+svc.Name] = true
		}
	}
	for i := range snap.EndpointSlices {
		slice := &snap.EndpointSlices[i]
		byLocal := local[slice.Namespace+"/"+slice.Labels[discoveryv1.LabelServiceName]]
		for _, ep := range slice.Endpoints {
			if byLocal && ep.NodeName != nil {
				v.alone[*ep.NodeName] = true
			}
			if ep.Hints == nil {
				continue
			}
			for _, n := range ep.Hints.ForNodes {
				v.alone[n.Name] = true
			}
			v.zones = v.zones || len(ep.Hints.ForZones) > 0
		}
	}
	return v, nil
}

// key is what the node's plan depends on in this snapshot: equal keys,
// equal tables for IPTables. A node planned on its own gets its name.
func (v *fleetView) key(node string, s *renderSettings) (string, []cluster.Warning, error) {
	cfg := s.cluster
	cfg.NodeName = node
	tables, warnings, err := cluster.Build(v.nodes, cfg)
	var missing *cluster.NodeNotFoundError
	if errors.As(err, &missing) && missing.Err == nil {
		return "missing", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if v.alone[node] {
		return "node " + node, warnings, nil
	}
	var b strings.Builder
	for _, f := range s.families {
		t := tables.ForFamily(f)
		whole := nodetable.ServiceTable{Family: f, Node: t.Node, ServiceCIDRs: t.ServiceCIDRs, Ports: v.ports.ForFamily(f).Ports}
		b.WriteString(render.IPTablesNodeKey(&whole, s.cfg) + "; ")
	}
	if v.zones {
		b.WriteString("zone " + tables.IPv4.Node.Zone)
	}
	return b.String(), warnings, nil
}
