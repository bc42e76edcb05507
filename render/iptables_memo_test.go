package render_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestIPTablesRendererMatchesIPTables holds the memoizing renderer to
// IPTables over a series of tables and settings, each step changing what
// some ports render: the two must print the same ruleset every time.
func TestIPTablesRendererMatchesIPTables(t *testing.T) {
	m := newMemoTables()
	masqAll := m.cfg
	masqAll.MasqueradeAll = true
	// Past 1,000 endpoints kube-proxy leaves out per-endpoint comments.
	large := *m.otherNode
	large.Ports = append(slices.Clone(large.Ports), synthetic.Table(100, 3).Ports...)
	for i := range large.Ports[len(m.otherNode.Ports):] {
		large.Ports[len(m.otherNode.Ports)+i].Name.Namespace = "extra"
	}
	if n := endpoints(&large); n <= 1000 {
		t.Fatalf("the large table has %d endpoints", n)
	}
	steps := append(m.steps(),
		memoStep{"masquerade all", m.otherNode, masqAll},
		memoStep{"large cluster", &large, m.cfg},
		memoStep{"small again", m.otherNode, m.cfg})
	var r render.IPTablesRenderer
	checkMemoSteps(t, steps,
		func(t *nodetable.ServiceTable, cfg render.Config) string { return r.Render(t, cfg).String() },
		func(t *nodetable.ServiceTable, cfg render.Config) string { return render.IPTables(t, cfg).String() })
}

// TestIPTablesRendererReusesUnchangedPorts checks that an unchanged port's
// chains are taken over, not written again, and a changed port's are new.
func TestIPTablesRendererReusesUnchangedPorts(t *testing.T) {
	base := synthetic.Table(50, 3)
	cfg := render.DefaultConfig()
	var r render.IPTablesRenderer
	before := r.Render(base, cfg).Table(ipt.NAT)
	after := r.Render(synthetic.WithOneEndpointChanged(base, 20, 1), withLinkLocal(cfg)).Table(ipt.NAT)
	reused, renewed := 0, 0
	for _, c := range after.Chains {
		if before.Chain(c.Name) == c {
			reused++
		} else {
			renewed++
		}
	}
	// The shared chains and the changed port's are written anew.
	if reused == 0 || renewed > len(before.Chains)/4 {
		t.Errorf("%d chains reused, %d written anew of %d", reused, renewed, len(after.Chains))
	}
}

func endpoints(t *nodetable.ServiceTable) (n int) {
	for i := range t.Ports {
		n += len(t.Ports[i].AllEndpoints)
	}
	return n
}

// TestIPTablesRendererAcrossNodes renders the same ports for other nodes,
// as plan --all-nodes does: another name, zone and address (the source
// ranges of the varied table's load balancers hold some nodes' addresses,
// not others'), and in NodeCIDR mode another pod range. The output must
// be IPTables' every time, and a port the node does not reach is taken
// over from the last node's render.
func TestIPTablesRendererAcrossNodes(t *testing.T) {
	m := newMemoTables()
	node := func(name, ip, pods, zone string) *nodetable.ServiceTable {
		n := *m.nodePort
		n.Node = nodetable.Node{Name: name, IPs: []netip.Addr{netip.MustParseAddr(ip)},
			PodCIDRs: []netip.Prefix{netip.MustParsePrefix(pods)}, Zone: zone}
		return &n
	}
	a := node("node-a", "172.18.0.2", "10.128.1.0/24", "zone-a")
	b := node("node-b", "172.18.0.3", "10.128.2.0/24", "zone-b")
	c := node("node-c", "203.0.113.7", "10.128.3.0/24", "zone-a")
	nodeCIDR := m.cfg
	nodeCIDR.DetectLocalMode = render.LocalModeNodeCIDR
	steps := []memoStep{{"node a", a, m.cfg}, {"node b", b, m.cfg}, {"node c", c, m.cfg}, {"node a again", a, m.cfg},
		{"node a, NodeCIDR", a, nodeCIDR}, {"node b, NodeCIDR", b, nodeCIDR}, {"node c, NodeCIDR", c, nodeCIDR}}
	var r render.IPTablesRenderer
	checkMemoSteps(t, steps,
		func(t *nodetable.ServiceTable, cfg render.Config) string { return r.Render(t, cfg).String() },
		func(t *nodetable.ServiceTable, cfg render.Config) string { return render.IPTables(t, cfg).String() })

	var memo render.IPTablesRenderer
	before := memo.Render(a, m.cfg).Table(ipt.NAT)
	after := memo.Render(b, m.cfg).Table(ipt.NAT)
	reused := 0
	for _, ch := range after.Chains {
		if before.Chain(ch.Name) == ch {
			reused++
		}
	}
	if reused < len(after.Chains)/2 {
		t.Errorf("another node: %d of %d chains taken over", reused, len(after.Chains))
	}
}
