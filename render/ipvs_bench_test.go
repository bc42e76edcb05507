package render_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

func BenchmarkRenderIPVS(b *testing.B) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	for _, n := range benchsize.Sizes(b, 1000, 10000, 30000) {
		table := synthetic.Table(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			vs, rs := 0, 0
			for b.Loop() {
				out := render.IPVS(table, cfg, render.IPVSOptions{})
				vs, rs = len(out.VirtualServers), 0
				for _, v := range out.VirtualServers {
					rs += len(v.RealServers)
				}
			}
			b.ReportMetric(float64(vs), "virtualservers")
			b.ReportMetric(float64(rs), "realservers")
		})
	}
}
