package traffic_test

import (
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/traffic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
	tus "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/userspace"
)

// traceTable is node1's table of family f, as the loaders render it, and
// the node as trace sees it with the lab's configuration.
func traceTable(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (*nodetable.ServiceTable, *trace.Node) {
	t.Helper()
	for _, tab := range usedTables(t, snap) {
		if tab.Family == f {
			return tab, trace.NodeOf(tab, trace.NodeOptions{ClusterCIDRs: labConfig().ClusterCIDRs})
		}
	}
	return nil, nil
}

// iptablesEvaluator is the rendered iptables ruleset that the loader
// restores, as a trace evaluator.
func iptablesEvaluator(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node) {
	tab, node := traceTable(t, snap, f)
	if tab == nil {
		return nil, nil
	}
	ev, err := tipt.New(render.IPTables(tab, labConfig()), node, tipt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ev, node
}

// nftablesEvaluator is the rendered nftables table that the loader
// applies, as a trace evaluator.
func nftablesEvaluator(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node) {
	tab, node := traceTable(t, snap, f)
	if tab == nil {
		return nil, nil
	}
	ev, err := tnft.New(render.NFTables(tab, labConfig()), node)
	if err != nil {
		t.Fatal(err)
	}
	return ev, node
}

// nftablesCompactEvaluator is nftablesEvaluator in the compact layout.
func nftablesCompactEvaluator(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node) {
	tab, node := traceTable(t, snap, f)
	if tab == nil {
		return nil, nil
	}
	cfg := labConfig()
	cfg.NFTablesLayout = render.NFTablesLayoutCompact
	ev, err := tnft.New(render.NFTables(tab, cfg), node)
	if err != nil {
		t.Fatal(err)
	}
	return ev, node
}

// userspaceEvaluator is the rendered userspace ruleset (portal rules and
// proxy ports) that the loader applies, as a trace evaluator.
func userspaceEvaluator(listen netip.Addr) traffic.EvaluatorFunc {
	return func(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node) {
		tab, node := traceTable(t, snap, f)
		if tab == nil {
			return nil, nil
		}
		ev, err := tus.New(render.Userspace(tab, labConfig(), render.UserspaceOptions{ListenIP: listen}), node)
		if err != nil {
			t.Fatal(err)
		}
		return ev, node
	}
}
