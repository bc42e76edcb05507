package render_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// TestIPTablesRendererMatchesIPTables holds the memoizing renderer to
// IPTables over a series of tables and settings, each step changing what
// some ports render: the two must print the same ruleset every time.
func TestIPTablesRendererMatchesIPTables(t *testing.T) {
	base := synthetic.VariedTable(300, 3)
	base.Node = nodetable.Node{Name: "node1", IPs: []netip.Addr{netip.MustParseAddr("172.18.0.2")}}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	masqAll := cfg
	masqAll.MasqueradeAll = true

	changed := synthetic.WithOneEndpointChanged(base, 150, 1)
	fewer := *changed
	fewer.Ports = slices.Delete(slices.Clone(changed.Ports), 10, 12)
	nodePort := fewer
	nodePort.Ports = slices.Clone(fewer.Ports)
	nodePort.Ports[20].NodePort = 30999
	otherNode := nodePort
	// Inside the load balancers' source ranges: their KUBE-FW chains let
	// the node's own traffic through.
	otherNode.Node.IPs = []netip.Addr{netip.MustParseAddr("203.0.113.7")}
	// Past 1,000 endpoints kube-proxy leaves out per-endpoint comments.
	large := otherNode
	large.Ports = append(slices.Clone(otherNode.Ports), synthetic.Table(100, 3).Ports...)
	for i := range large.Ports[len(otherNode.Ports):] {
		large.Ports[len(otherNode.Ports)+i].Name.Namespace = "extra"
	}

	var r render.IPTablesRenderer
	for _, step := range []struct {
		name  string
		table *nodetable.ServiceTable
		cfg   render.Config
	}{
		{"first", base, cfg},
		{"again", base, cfg},
		{"endpoint changed", changed, cfg},
		{"ports removed", &fewer, cfg},
		{"nodePort set", &nodePort, cfg},
		{"node IP changed", &otherNode, cfg},
		{"masquerade all", &otherNode, masqAll},
		{"large cluster", &large, cfg},
		{"small again", &otherNode, cfg},
	} {
		if step.name == "large cluster" && endpoints(step.table) <= 1000 {
			t.Fatalf("the large table has %d endpoints", endpoints(step.table))
		}
		got, want := r.Render(step.table, step.cfg).String(), render.IPTables(step.table, step.cfg).String()
		if got != want {
			t.Fatalf("%s: the renderer's ruleset differs from IPTables':\n%s", step.name, firstDiff(want, got))
		}
	}
}

// TestIPTablesRendererReusesUnchangedPorts checks that an unchanged port's
// chains are taken over, not written again, and a changed port's are new.
func TestIPTablesRendererReusesUnchangedPorts(t *testing.T) {
	base := synthetic.Table(50, 3)
	cfg := render.DefaultConfig()
	var r render.IPTablesRenderer
	before := r.Render(base, cfg).Table(ipt.NAT)
	after := r.Render(synthetic.WithOneEndpointChanged(base, 20, 1), cfg).Table(ipt.NAT)
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
