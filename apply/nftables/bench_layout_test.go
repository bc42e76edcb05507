package nftables_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// layoutConfig is benchConfig in the given nftables layout.
func layoutConfig(layout string) render.Config {
	cfg := benchConfig()
	cfg.NFTablesLayout = layout
	return cfg
}

// processCPU is the process's user and system CPU time so far. The
// kernel's work on a netlink batch is done in the sending thread, so it
// counts here; on a loaded machine it says more than the wall clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLayout compares kube-proxy's nftables layout with the compact
// one (--nftables-layout=compact) on the same Services: a full apply into
// an empty node ("from-empty", a fresh namespace each round, outside the
// timer; cpu-s/op is the process's CPU time, the kernel's included), and
// one endpoint of one Service changing in a node holding the full table,
// with a long-running client's cache and a memoizing renderer
// ("one-endpoint"), as `apply --watch` runs. The compact layout has no
// anonymous numgen map, whose creation costs the kernel time that grows
// with the number of sets already in the table.
func BenchmarkLayout(b *testing.B) {
	for _, n := range benchSizes(b) {
		base := synthetic.Table(n, 10)
		for _, layout := range []string{render.NFTablesLayoutKubeProxy, render.NFTablesLayoutCompact} {
			cfg := layoutConfig(layout)
			desired := render.NFTables(base, cfg)
			b.Run(fmt.Sprintf("services=%d/layout=%s", n, layout), func(b *testing.B) {
				b.Run("from-empty", func(b *testing.B) {
					var cpu time.Duration
					for b.Loop() {
						b.StopTimer()
						node := newNode(b)
						b.StartTimer()
						start := processCPU()
						planAndApply(b, node.client, desired)
						cpu += processCPU() - start
					}
					b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
				})
				b.Run("one-endpoint", func(b *testing.B) {
					// As apply --watch renders: with a renderer that
					// keeps the rules of unchanged Services.
					var renderer render.NFTablesRenderer
					desired := renderer.Render(base, cfg)
					node := newNode(b)
					node.apply(b, desired)
					node.client.Cache = true
					if _, err := node.client.Plan(context.Background(), []*nft.Ruleset{desired}); err != nil {
						b.Fatal(err)
					}
					round := 0
					var ops int
					var cpu time.Duration
					for b.Loop() {
						b.StopTimer()
						round++
						changed := renderer.Render(synthetic.WithOneEndpointChanged(base, n/2, round), cfg)
						b.StartTimer()
						start := processCPU()
						ops = planAndApply(b, node.client, changed)
						cpu += processCPU() - start
					}
					b.ReportMetric(float64(ops), "ops")
					b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
				})
			})
		}
	}
}
