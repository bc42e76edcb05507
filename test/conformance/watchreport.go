package conformance

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
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
// server and the kilobytes received from it. A process capped before its
// first sync (Watched.Cap) reports the cap as its first sync, a lower
// bound, with kp-capped (or tool-capped) the share of runs capped, and
// its CPU and peak RSS up to the cap. Then it logs the aims.
func (s *WatchSamples) Report(b *testing.B) {
	if len(s.kp) == 0 || len(s.tool) == 0 {
		return
	}
	kp, tool := summarize(b, s.kp), summarize(b, s.tool)
	kp.report(b, "kp")
	tool.report(b, "tool")
	for _, line := range aims(kp, tool) {
		b.Log(line)
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average: %s", strings.TrimSpace(string(load)))
	}
}

// watchFigures are one process's figures over the runs of a benchmark:
// latencies pooled, the rest summed over the runs.
type watchFigures struct {
	name                                  string
	runs, capped                          float64
	lat                                   []float64
	cpu, self, rss, first, reqs, received float64
	firstRules                            float64
	syncs                                 histTotals
}

func summarize(b *testing.B, runs []*Watched) watchFigures {
	f := watchFigures{name: runs[0].Name, runs: float64(len(runs))}
	for _, w := range runs {
		f.reqs += w.API.Total()
		f.received += float64(w.API.Received)
		b.Logf("%s's API server load: %s; until synced and quiet: %s", w.Name, w.API, w.APIStart)
		if w.Capped {
			f.capped++
		}
		f.syncs.count += w.Syncs.count
		f.syncs.sum += w.Syncs.sum
		f.lat = append(f.lat, w.Latencies...)
		f.self += w.Usage.CPU.Seconds()
		f.cpu += (w.Usage.CPU + w.Usage.ChildrenCPU).Seconds()
		f.rss += float64(w.Usage.PeakRSS) / 1e6
		f.first += w.FirstSync.Seconds()
		f.firstRules += w.FirstSyncRules.Seconds()
	}
	return f
}

// report reports the figures under the metric prefix short; those of
// changes only when there were any.
func (f watchFigures) report(b *testing.B, short string) {
	if len(f.lat) > 0 {
		b.ReportMetric(percentile(f.lat, 50)*1000, short+"-p50-ms")
		b.ReportMetric(percentile(f.lat, 99)*1000, short+"-p99-ms")
		b.ReportMetric(f.syncs.sum/f.syncs.count*1000, short+"-sync-ms")
	}
	b.ReportMetric(f.cpu/f.runs, short+"-cpu-s")
	b.ReportMetric(f.rss/f.runs, short+"-rss-MB")
	b.ReportMetric(f.first/f.runs, short+"-sync1-s")
	if f.capped == 0 {
		b.ReportMetric(f.firstRules/f.runs, short+"-sync1-rules-s")
	}
	b.ReportMetric(f.reqs/f.runs, short+"-api-reqs")
	b.ReportMetric(f.received/f.runs/1e3, short+"-api-kB")
	if f.capped > 0 {
		b.ReportMetric(f.capped/f.runs, short+"-capped")
		b.Logf("%s: first sync not finished in %d of %.0f runs: %.0f s is a lower bound, CPU and peak RSS are up to then",
			f.name, int(f.capped), f.runs, f.first/f.runs)
	}
	b.Logf("%s: %d changes, latencies %s ms; %v syncs meanwhile taking %.0f ms; CPU %.2f s of which its own %.2f s",
		f.name, len(f.lat), millis(f.lat), f.syncs.count, f.syncs.sum*1000, f.cpu/f.runs, f.self/f.runs)
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
