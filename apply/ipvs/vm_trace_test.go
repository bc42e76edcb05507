package ipvs

import (
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/ipvs"
)

// ipvsEvaluator is the ipvs state ipvsLoader applies, as a trace
// evaluator: TestIPVSTraffic checks each probe's real outcome against it.
func ipvsEvaluator(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node) {
	t.Helper()
	tables, _, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	tab := tables.ForFamily(f)
	if f == nodetable.IPv6 && len(tab.Ports) == 0 {
		return nil, nil
	}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR, netlab.ClusterCIDRv6}
	node := trace.NodeOf(tab, trace.NodeOptions{ClusterCIDRs: cfg.ClusterCIDRs})
	ev, node, err := tipvs.New(render.IPVS(tab, cfg, render.IPVSOptions{}), node)
	if err != nil {
		t.Fatal(err)
	}
	return ev, node
}
