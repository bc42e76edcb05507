package render_test

import (
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// BenchmarkRenderUserspace uses a 40000-port range: the default range
// (10000 ports) cannot hold 30000 Service ports.
func BenchmarkRenderUserspace(b *testing.B) {
	cfg := render.DefaultConfig()
	opts := render.UserspaceOptions{PortRange: render.ProxyPortRange{First: 20000, Last: 59999}}
	for _, n := range benchsize.Sizes(b, 1000, 10000, 30000) {
		table := synthetic.Table(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			rules := 0
			for b.Loop() {
				out := render.Userspace(table, cfg, opts)
				rules = 0
				for _, t := range out.IPTables.Tables {
					for _, c := range t.Chains {
						rules += len(c.Rules)
					}
				}
			}
			b.ReportMetric(float64(rules), "rules")
		})
	}
}
