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

func BenchmarkRenderNFTables(b *testing.B) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	for _, n := range benchsize.Sizes(b, 1000, 10000, 30000) {
		table := synthetic.Table(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			rules, elements := 0, 0
			for b.Loop() {
				rs := render.NFTables(table, cfg)
				rules, elements = 0, 0
				for _, c := range rs.Chains {
					rules += len(c.Rules)
				}
				for _, s := range rs.Sets {
					elements += len(s.Elements)
				}
			}
			b.ReportMetric(float64(rules), "rules")
			b.ReportMetric(float64(elements), "elements")
		})
	}
}

// BenchmarkNFTablesRendererOneEndpoint renders the table after one
// endpoint of one Service changed, with a renderer that rendered the table
// before (apply --watch); compare BenchmarkRenderNFTables, a render from
// nothing.
func BenchmarkNFTablesRendererOneEndpoint(b *testing.B) {
	benchRendererOneEndpoint(b, func() func(*nodetable.ServiceTable, render.Config) {
		var r render.NFTablesRenderer
		return func(t *nodetable.ServiceTable, cfg render.Config) { r.Render(t, cfg) }
	})
}

// benchRendererOneEndpoint runs a memoizing renderer, made anew for each
// size by newRender, on one endpoint change after another.
func benchRendererOneEndpoint(b *testing.B, newRender func() func(*nodetable.ServiceTable, render.Config)) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		base := synthetic.Table(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			render := newRender()
			render(base, cfg)
			round := 0
			for b.Loop() {
				b.StopTimer()
				round++
				changed := synthetic.WithOneEndpointChanged(base, n/2, round)
				b.StartTimer()
				render(changed, cfg)
			}
		})
	}
}
