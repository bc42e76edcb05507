package conformance

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"
)

// WatchSamples pools the side-by-side runs of one benchmark.
type WatchSamples struct {
	kp, tool []*Watched
}

// Add pools one run's pair.
func (s *WatchSamples) Add(p Pair) {
	s.kp = append(s.kp, p[0])
	s.tool = append(s.tool, p[1])
}

// Report reports per process (kp = kube-proxy, tool = kubectl-svcproxy)
// the latency percentiles over every run's samples, the mean duration of
// its syncs during the changes, and the mean of the runs' CPU seconds
// (with the children it waited for: kube-proxy runs iptables-restore or
// nft), peak RSS, time to the first sync, and its requests to the API
// server and the kilobytes received from it.
func (s *WatchSamples) Report(b *testing.B) {
	for _, p := range []struct {
		short string
		runs  []*Watched
	}{{"kp", s.kp}, {"tool", s.tool}} {
		if len(p.runs) == 0 {
			return
		}
		var lat []float64
		var cpu, self, rss, first, reqs, received float64
		var syncs histTotals
		for _, w := range p.runs {
			reqs += w.API.Total()
			received += float64(w.API.Received)
			b.Logf("%s's API server load: %s; until synced and quiet: %s", w.Name, w.API, w.APIStart)
			syncs.count += w.Syncs.count
			syncs.sum += w.Syncs.sum
			lat = append(lat, w.Latencies...)
			self += w.Usage.CPU.Seconds()
			cpu += (w.Usage.CPU + w.Usage.ChildrenCPU).Seconds()
			rss += float64(w.Usage.PeakRSS) / 1e6
			first += w.FirstSync.Seconds()
		}
		runs := float64(len(p.runs))
		b.ReportMetric(percentile(lat, 50)*1000, p.short+"-p50-ms")
		b.ReportMetric(percentile(lat, 99)*1000, p.short+"-p99-ms")
		b.ReportMetric(syncs.sum/syncs.count*1000, p.short+"-sync-ms")
		b.ReportMetric(cpu/runs, p.short+"-cpu-s")
		b.ReportMetric(rss/runs, p.short+"-rss-MB")
		b.ReportMetric(first/runs, p.short+"-sync1-s")
		b.ReportMetric(reqs/runs, p.short+"-api-reqs")
		b.ReportMetric(received/runs/1e3, p.short+"-api-kB")
		b.Logf("%s: %d changes, latencies %s ms; %v syncs meanwhile taking %.0f ms; CPU %.2f s of which its own %.2f s",
			p.runs[0].Name, len(lat), millis(lat), syncs.count, syncs.sum*1000, cpu/runs, self/runs)
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average: %s", strings.TrimSpace(string(load)))
	}
}

// percentile is the nearest-rank p-th percentile of xs (at 20 samples, the
// p99 is the largest).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sorted := slices.Sorted(slices.Values(xs))
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func millis(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, strconv.FormatFloat(x*1000, 'f', 0, 64))
	}
	return strings.Join(parts, " ")
}

// WatchBenchSizes are the sizes of the watch benchmarks: 100 Services,
// or what SVCPROXY_BENCH_SIZES asks for (test/benchsize), e.g.
// "1000,10000".
func WatchBenchSizes(b testing.TB) []int { return benchsize.Sizes(b, 100) }
