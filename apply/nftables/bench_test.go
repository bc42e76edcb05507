package nftables_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// benchSizes are the Service counts of the benchmarks, each with 10
// endpoints. Select one with -bench 'X/services=1000$'. 30k takes about 20
// minutes in all (most of it `nft -f` and full applies that a one-change
// benchmark needs as its starting point), so it runs only when asked for:
// SVCPROXY_BENCH_SIZES=1000,10000,30000 (test/benchsize).
func benchSizes(b *testing.B) []int { return benchsize.Sizes(b, 1000, 10000) }

// BenchmarkApplyFromEmpty measures a full apply (read, diff, one batch)
// into a node without the table, and `nft -f` of the same table's script
// for comparison. Each round gets a fresh namespace, outside the timer:
// deleting a large table costs more than what is measured.
func BenchmarkApplyFromEmpty(b *testing.B) {
	for _, n := range benchSizes(b) {
		desired := render.NFTables(synthetic.Table(n, 10), benchConfig())
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.Run("netlink", func(b *testing.B) {
				var ops int
				for b.Loop() {
					b.StopTimer()
					node := newNode(b)
					b.StartTimer()
					plans, err := node.client.Plan(context.Background(), []*nft.Ruleset{desired})
					if err == nil {
						err = node.client.Apply(context.Background(), plans)
					}
					if err != nil {
						b.Fatal(err)
					}
					ops = plans[0].Ops
				}
				b.ReportMetric(float64(ops), "ops")
			})
			b.Run("nft-f", func(b *testing.B) {
				script := []byte(desired.Script())
				for b.Loop() {
					b.StopTimer()
					requireKernel(b)
					lab := netlab.New(b)
					b.StartTimer()
					if out, err := lab.Node().RunInput(context.Background(), script, "nft", "-f", "-"); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
			})
		})
	}
}

// BenchmarkOneEndpointChange measures one endpoint of one Service changing
// in a node that holds the full table: plan and apply together, reading
// the table from the kernel ("plan+apply"), from the generation cache in
// memory ("plan+apply/cached", a long-running client) or from its file (a
// new client each round, as each run of the command is), and apply alone
// (the plan made outside the timer).
func BenchmarkOneEndpointChange(b *testing.B) {
	for _, n := range benchSizes(b) {
		base := synthetic.Table(n, 10)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			node := newNode(b)
			node.apply(b, render.NFTables(base, benchConfig()))
			round := 0
			next := func() *nft.Ruleset {
				round++
				return render.NFTables(synthetic.WithOneEndpointChanged(base, n/2, round), benchConfig())
			}
			b.Run("plan+apply", func(b *testing.B) {
				var ops int
				for b.Loop() {
					b.StopTimer()
					changed := next()
					b.StartTimer()
					ops = planAndApply(b, node.client, changed)
				}
				b.ReportMetric(float64(ops), "ops")
			})
			// Both cached clients start from a read made outside the timer.
			cached := openClient(b, node.lab.Node())
			cached.Cache = true
			warm(b, cached, base)
			b.Run("plan+apply/cached", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					changed := next()
					b.StartTimer()
					planAndApply(b, cached, changed)
				}
			})
			b.Run("plan+apply/cache-file", func(b *testing.B) {
				dir := cacheDir(b)
				first := openClient(b, node.lab.Node())
				first.CacheDir = dir
				warm(b, first, base)
				for b.Loop() {
					b.StopTimer()
					changed := next()
					b.StartTimer()
					client := openClient(b, node.lab.Node())
					client.CacheDir = dir
					planAndApply(b, client, changed)
					client.Close()
				}
			})
			b.Run("apply", func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					plans := node.plan(b, next())
					b.StartTimer()
					if err := node.client.Apply(context.Background(), plans); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// warm plans (without applying) with client, so that its cache holds the
// live table.
func warm(b *testing.B, client *applynft.Client, base *nodetable.ServiceTable) {
	if _, err := client.Plan(context.Background(), []*nft.Ruleset{render.NFTables(base, benchConfig())}); err != nil {
		b.Fatal(err)
	}
}

func planAndApply(b *testing.B, client *applynft.Client, desired *nft.Ruleset) int {
	plans, err := client.Plan(context.Background(), []*nft.Ruleset{desired})
	if err == nil {
		err = client.Apply(context.Background(), plans)
	}
	if err != nil {
		b.Fatal(err)
	}
	return plans[0].Ops
}
