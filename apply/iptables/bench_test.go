package iptables_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

func benchConfig() render.Config {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return cfg
}

func benchClient(b *testing.B, backend applyipt.Backend) (*applyipt.Client, *recordingExec) {
	testenv.RequireRoot(b)
	lab := netlab.New(b)
	rec := &recordingExec{inner: nsExec{ns: lab.Node().Name()}}
	return &applyipt.Client{Exec: rec, Backend: backend, WaitSeconds: 5, Ownership: render.IPTablesOwnership(), CacheDir: cacheDir(b), Generation: generation(lab.Node()), NetnsCookie: netnsCookie(b, lab.Node()), Counters: lab.Node().NFAcctCounters()}, rec
}

func scriptBytes(scripts [][]byte) int {
	n := 0
	for _, s := range scripts {
		n += len(s)
	}
	return n
}

// BenchmarkApplyFromEmpty measures a full apply (read, diff, restore) into
// an empty node, per backend, at 1k and 10k Services x 10 endpoints.
func BenchmarkApplyFromEmpty(b *testing.B) {
	for _, backend := range backends {
		for _, n := range benchsize.Sizes(b, 1000, 10000) {
			desired := render.IPTables(synthetic.Table(n, 10), benchConfig())
			b.Run(fmt.Sprintf("%s/services=%d", backend, n), func(b *testing.B) {
				var bytes int
				for b.Loop() {
					// A fresh namespace each time: deleting 10k Services'
					// chains costs more than the apply being measured.
					b.StopTimer()
					client, rec := benchClient(b, backend)
					b.StartTimer()
					plans, err := client.Plan(context.Background(), []*ipt.Ruleset{desired})
					if err != nil {
						b.Fatal(err)
					}
					if err := client.Apply(context.Background(), plans); err != nil {
						b.Fatal(err)
					}
					bytes = scriptBytes(rec.restores)
				}
				b.ReportMetric(float64(bytes), "restore-bytes")
			})
		}
	}
}

// BenchmarkOneEndpointChange measures plan alone, and plan plus apply, of
// one endpoint changing in a node that holds the full ruleset.
func BenchmarkOneEndpointChange(b *testing.B) {
	for _, backend := range backends {
		for _, n := range benchsize.Sizes(b, 1000, 10000) {
			base := synthetic.Table(n, 10)
			b.Run(fmt.Sprintf("%s/services=%d", backend, n), func(b *testing.B) {
				client, rec := benchClient(b, backend)
				full := render.IPTables(base, benchConfig())
				plans, err := client.Plan(context.Background(), []*ipt.Ruleset{full})
				if err == nil {
					err = client.Apply(context.Background(), plans)
				}
				if err != nil {
					b.Fatal(err)
				}
				fullBytes := scriptBytes(rec.restores)
				b.Run("plan", func(b *testing.B) {
					changed := render.IPTables(synthetic.WithOneEndpointChanged(base, n/2, 1), benchConfig())
					for b.Loop() {
						if _, err := client.Plan(context.Background(), []*ipt.Ruleset{changed}); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run("plan+apply", func(b *testing.B) {
					round := 0
					var changeBytes int
					for b.Loop() {
						b.StopTimer()
						round++
						changed := render.IPTables(synthetic.WithOneEndpointChanged(base, n/2, round), benchConfig())
						before := len(rec.restores)
						b.StartTimer()
						plans, err := client.Plan(context.Background(), []*ipt.Ruleset{changed})
						if err == nil {
							err = client.Apply(context.Background(), plans)
						}
						if err != nil {
							b.Fatal(err)
						}
						changeBytes = scriptBytes(rec.restores[before:])
					}
					b.ReportMetric(float64(changeBytes), "restore-bytes")
					b.ReportMetric(float64(fullBytes), "full-sync-bytes")
				})
			})
		}
	}
}
