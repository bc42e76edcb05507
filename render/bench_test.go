package render_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// syntheticTable returns a node-local table of n ClusterIP Services, each
// with one TCP port and perService ready endpoints spread over ten nodes;
// every tenth Service is a NodePort. It is built directly (not through
// cluster.Build) so that the benchmark measures rendering alone.
func syntheticTable(n, perService int) *cluster.ServiceTable {
	t := &cluster.ServiceTable{
		Family: cluster.IPv4,
		Node:   cluster.Node{Name: "node1", IPs: []netip.Addr{netip.MustParseAddr("192.168.77.10")}},
	}
	for i := 0; i < n; i++ {
		sp := cluster.ServicePort{
			Name:      cluster.ServicePortName{Namespace: fmt.Sprintf("ns%d", i%50), Name: fmt.Sprintf("svc%d", i), Port: "http", Protocol: cluster.TCP},
			ClusterIP: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}),
			Port:      80,
		}
		if i%10 == 0 {
			sp.NodePort = int32(30000 + i%2768)
		}
		for j := 0; j < perService; j++ {
			k := i*perService + j
			sp.AllEndpoints = append(sp.AllEndpoints, cluster.Endpoint{
				IP:       netip.AddrFrom4([4]byte{10, byte(128 + k>>16), byte(k >> 8), byte(k)}),
				Port:     8080,
				NodeName: fmt.Sprintf("node%d", j+1),
				Local:    j == 0,
				Ready:    true, Serving: true,
			})
		}
		sp.ClusterEndpoints = sp.AllEndpoints
		sp.ReachableEndpoints = sp.AllEndpoints
		sp.HasEndpoints = true
		t.Ports = append(t.Ports, sp)
	}
	return t
}

func BenchmarkRenderIPTables(b *testing.B) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	for _, n := range []int{1000, 10000, 30000} {
		table := syntheticTable(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			rules := 0
			for b.Loop() {
				rs := render.IPTables(table, cfg)
				rules = 0
				for _, t := range rs.Tables {
					for _, c := range t.Chains {
						rules += len(c.Rules)
					}
				}
			}
			b.ReportMetric(float64(rules), "rules")
		})
	}
}
