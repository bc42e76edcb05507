package render_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

func BenchmarkRenderIPTables(b *testing.B) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	for _, n := range benchsize.Sizes(b, 1000, 10000, 30000) {
		table := synthetic.Table(n, 10)
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

// BenchmarkIPTablesRendererOneEndpoint renders the tables after one
// endpoint of one Service changed, with a renderer that rendered them
// before (apply --watch); compare BenchmarkRenderIPTables, a render from
// nothing.
func BenchmarkIPTablesRendererOneEndpoint(b *testing.B) {
	benchRendererOneEndpoint(b, func() func(*nodetable.ServiceTable, render.Config) {
		var r render.IPTablesRenderer
		return func(t *nodetable.ServiceTable, cfg render.Config) { r.Render(t, cfg) }
	})
}
