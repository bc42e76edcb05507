package render_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestIPTablesNodeKey holds IPTables to IPTablesNodeKey: the same ports
// seen from nodes that differ in name, zone, addresses and pod range, and
// whose endpoints differ in what cluster.Build has already applied
// (Local, NodeName, hints, conditions), under several settings; any two
// whose keys are equal must render the same rules. The key must also
// tell apart what does change the rules, or it would merge nodes.
func TestIPTablesNodeKey(t *testing.T) {
	base := synthetic.VariedTable(60, 3)
	node := func(name, ip, pods, zone string, flip bool) *nodetable.ServiceTable {
		n := *base
		n.Node = nodetable.Node{Name: name, IPs: []netip.Addr{netip.MustParseAddr(ip)},
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix(pods)}, Zone: zone}
		if flip {
			n.Ports = flipEndpointFlags(base.Ports, name)
		}
		return &n
	}
	tables := []*nodetable.ServiceTable{
		node("node-a", "172.18.0.2", "10.128.1.0/24", "zone-a", false),
		node("node-b", "172.18.0.3", "10.128.2.0/24", "zone-b", true),
		node("node-c", "203.0.113.7", "10.128.1.0/24", "zone-a", true),   // in a source range
		node("node-d", "192.168.77.9", "10.128.3.0/24", "zone-a", false), // in the other one
		node("node-e", "203.0.113.8", "10.128.1.0/24", "zone-c", false),
	}
	configs := map[string]render.Config{"default": render.DefaultConfig()}
	nodeCIDR := render.DefaultConfig()
	nodeCIDR.DetectLocalMode = render.LocalModeNodeCIDR
	configs["NodeCIDR"] = nodeCIDR
	primary := render.DefaultConfig()
	primary.NodePortAddresses = []string{render.NodePortPrimary}
	configs["nodeport primary"] = primary
	cidrs := render.DefaultConfig()
	cidrs.NodePortAddresses = []string{"172.18.0.0/16", "127.0.0.0/8"}
	configs["nodeport CIDRs"] = cidrs
	// The pairs that share a key: those whose nodes differ only in what
	// IPTables does not read. Source ranges hold c and e, not a and b; a,
	// c and e share a pod range; the NodePort CIDRs hold a's and b's
	// addresses, not c's or e's.
	want := map[string][]string{"default": {"a~b", "c~e"}, "NodeCIDR": {"c~e"}, "nodeport primary": nil, "nodeport CIDRs": {"c~e"}}
	for name, cfg := range configs {
		var shared []string
		for i, a := range tables {
			for _, b := range tables[i+1:] {
				sameKey := render.IPTablesNodeKey(a, cfg) == render.IPTablesNodeKey(b, cfg)
				sameRules := render.IPTables(a, cfg).String() == render.IPTables(b, cfg).String()
				if sameKey && !sameRules {
					t.Errorf("%s: %s and %s have the same key but render different rules", name, a.Node.Name, b.Node.Name)
				}
				if sameKey {
					shared = append(shared, a.Node.Name[len("node-"):]+"~"+b.Node.Name[len("node-"):])
				}
			}
		}
		if !slices.Equal(shared, want[name]) {
			t.Errorf("%s: pairs sharing a key %v, want %v", name, shared, want[name])
		}
	}
}

// flipEndpointFlags copies ports with every endpoint's Local, NodeName,
// hints and conditions changed, the lists kept: what IPTables must not
// read.
func flipEndpointFlags(ports []nodetable.ServicePort, node string) []nodetable.ServicePort {
	flip := func(eps []nodetable.Endpoint) []nodetable.Endpoint {
		out := slices.Clone(eps)
		for i := range out {
			e := &out[i]
			e.Local, e.Ready, e.Serving, e.Terminating = !e.Local, !e.Ready, !e.Serving, !e.Terminating
			e.NodeName = fmt.Sprintf("%s-%d", node, i)
			e.ZoneHints, e.NodeHints = []string{"zone-x"}, []string{node}
		}
		return out
	}
	out := slices.Clone(ports)
	for i := range out {
		p := &out[i]
		p.AllEndpoints, p.ClusterEndpoints = flip(p.AllEndpoints), flip(p.ClusterEndpoints)
		p.LocalEndpoints, p.ReachableEndpoints = flip(p.LocalEndpoints), flip(p.ReachableEndpoints)
	}
	return out
}
