package render_test

import (
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
