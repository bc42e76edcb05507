package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/testcluster"
)

// watchBenchSizesEnv lists the sizes BenchmarkWatchLatency runs instead of
// the default 100 Services, e.g. "1000,10000".
const watchBenchSizesEnv = "SVCPROXY_BENCH_SIZES"

// The metrics both processes export under kube-proxy's names.
const (
	latencyCount = "kubeproxy_network_programming_duration_seconds_count"
	latencySum   = "kubeproxy_network_programming_duration_seconds_sum"
	syncCount    = "kubeproxy_sync_proxy_rules_duration_seconds_count"
	syncSum      = "kubeproxy_sync_proxy_rules_duration_seconds_sum"
)

// BenchmarkWatchLatency runs the real kube-proxy v1.37.2 and `kubectl
// svcproxy apply --watch` side by side, each in a network namespace of its
// own, against one API server holding N synthetic Services (10 endpoints
// each), in the same mode with the same kube-proxy configuration file.
// Once both have synced, it changes one endpoint of one Service at a time,
// stamping the change's time as the EndpointSlice controller does, and
// waits until both have counted the change in
// kubeproxy_network_programming_duration_seconds; each one's sample is the
// rise of the histogram's sum, its own exact measure of that change.
//
// It reports per process (kp = kube-proxy, tool = kubectl-svcproxy) the
// p50 and p99 of those samples, the mean duration of its syncs during
// the changes, the CPU seconds used over the run (with the children it
// waited for: kube-proxy runs iptables-restore or nft), the peak RSS and
// the time to the first sync, seen by polling every 250 ms. 100 Services by default; SVCPROXY_BENCH_SIZES=1000,10000 for
// more.
func BenchmarkWatchLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("starts kube-apiserver and kube-proxy (-short)")
	}
	for _, n := range watchBenchSizes(b) {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			e := newEnv(b)
			tool(b, e.root) // built before anything is timed
			s, snap := e.loadSynthetic(b, n)
			for _, m := range Modes {
				b.Run(string(m), func(b *testing.B) {
					var samples watchSamples
					for b.Loop() {
						samples.add(e.watchRun(b, s, snap, m, n))
					}
					samples.report(b)
				})
			}
		})
	}
}

func watchBenchSizes(b *testing.B) []int {
	v := os.Getenv(watchBenchSizesEnv)
	if v == "" {
		return []int{100}
	}
	var sizes []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want Service counts separated by commas", watchBenchSizesEnv, v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// changeRounds counts the endpoint changes made.
var changeRounds atomic.Int32

// watched is one of the two proxies of a run.
type watched struct {
	name      string
	ns        netlab.NS
	proc      *testcluster.Process
	started   time.Time
	synced    func(body []byte) bool
	firstSync time.Duration
	latencies []float64  // seconds, one per change
	syncs     histTotals // the syncs while the changes were made
	usage     testcluster.Usage
}

func (w *watched) scrape(ctx context.Context) ([]byte, error) {
	if err := w.proc.Running(); err != nil {
		return nil, err
	}
	return ScrapeMetrics(ctx, w.ns, metricsAddr)
}

// watchRun is one run: both proxies started, synced, changed, measured
// and stopped.
func (e *env) watchRun(b *testing.B, s *Scenario, snap *cluster.Snapshot, m Mode, n int) [2]*watched {
	ctx := context.Background()
	kp := e.startWatched(b, s, snap, m, "kube-proxy")
	tool := e.startWatched(b, s, snap, m, "kubectl-svcproxy")
	both := [2]*watched{kp, tool}
	firstSyncCap := max(3*time.Minute, time.Duration(n/1000)*time.Minute)
	if err := waitFirstSync(ctx, both, firstSyncCap); err != nil {
		b.Logf("tool's first sync: %v", tool.firstSync)
		b.Skipf("%v (capped at %v: not measured)", err, firstSyncCap)
	}
	if err := waitQuiet(ctx, both); err != nil {
		b.Fatal(err)
	}
	table := synthetic.Table(n, endpointsPerService)
	changes := 20
	if n <= 100 {
		changes = 10 // keeps CI's single run short
	}
	syncsBefore, err := readTotals(ctx, both, syncCount, syncSum)
	if err != nil {
		b.Fatal(err)
	}
	for i := range changes {
		round := int(changeRounds.Add(1)) // a new address in every change of the test binary
		sp := table.Ports[(i*7919+n/2)%n].Name
		before, err := readTotals(ctx, both, latencyCount, latencySum)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.changeOneEndpoint(ctx, sp.Namespace, sp.Name+"-1", round); err != nil {
			b.Fatal(err)
		}
		if err := waitProgrammed(ctx, both, before); err != nil {
			b.Fatal(err)
		}
		// Both idle again for their minimum sync period (1 s by default)
		// before the next change, so that each sample is one change's.
		time.Sleep(time.Second)
	}
	syncsAfter, err := readTotals(ctx, both, syncCount, syncSum)
	if err != nil {
		b.Fatal(err)
	}
	for i, w := range both {
		w.syncs = histTotals{syncsAfter[i].count - syncsBefore[i].count, syncsAfter[i].sum - syncsBefore[i].sum}
		u, err := w.proc.Usage()
		if err != nil {
			b.Fatal(err)
		}
		w.usage = u
		w.proc.Stop()
	}
	return both
}

// startWatched starts kube-proxy, or the tool with `apply --watch`, in a
// fresh node namespace with the scenario's kube-proxy configuration file
// for mode m; its API server bridge, and the metrics and healthz servers
// on the namespace's loopback, are the only things of its own.
func (e *env) startWatched(b *testing.B, s *Scenario, snap *cluster.Snapshot, m Mode, name string) *watched {
	ns := node(b, s, snap)
	config, err := e.kubeProxyConfig(b, s, m, ns, false)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	w := &watched{name: name, ns: ns}
	if name == "kube-proxy" {
		w.started = time.Now()
		kp, err := StartKubeProxy(ns, e.kubeProxy, config, dir)
		if err != nil {
			b.Fatal(err)
		}
		w.proc = kp.Process
		w.synced = func(body []byte) bool {
			m, err := parseSyncMetrics(bytes.NewReader(body))
			return err == nil && m.Synced("IPv4", "IPv6")
		}
	} else {
		cmd := ns.Command(context.Background(), tool(b, e.root), "apply", "--watch", "--config="+config,
			"--iptables-backend=nft", "--state-dir="+filepath.Join(dir, "state"), "--lock-file="+filepath.Join(dir, "lock"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
		w.started = time.Now()
		if w.proc, err = testcluster.StartCommand(name, cmd, filepath.Join(dir, "tool.log")); err != nil {
			b.Fatal(err)
		}
		w.synced = func(body []byte) bool { return MetricSum(body, syncCount) >= 1 }
	}
	b.Cleanup(w.proc.Stop)
	return w
}

// waitFirstSync polls both until each has finished its first sync, and
// notes when it did; it gives up after limit.
func waitFirstSync(ctx context.Context, both [2]*watched, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		done := true
		for _, w := range both {
			if w.firstSync > 0 {
				continue
			}
			body, err := w.scrape(ctx)
			if err := w.proc.Running(); err != nil {
				return err
			}
			if err == nil && w.synced(body) {
				w.firstSync = time.Since(w.started)
			} else {
				done = false
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no first sync of both after %v", limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitQuiet waits until neither has started a sync for two seconds:
// kube-proxy syncs again once it has read the Node, and a change should
// not wait behind that.
func waitQuiet(ctx context.Context, both [2]*watched) error {
	deadline := time.Now().Add(2 * time.Minute)
	last, quiet := -1.0, 0
	for quiet < 4 {
		var syncs float64
		for _, w := range both {
			body, err := w.scrape(ctx)
			if err != nil {
				return err
			}
			syncs += MetricSum(body, syncCount)
		}
		if syncs == last {
			quiet++
		} else {
			last, quiet = syncs, 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still syncing after 2 minutes (%v syncs)", syncs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

// changeOneEndpoint replaces the last endpoint of an EndpointSlice with
// an address of its own for round, stamping the slice with the time of
// the change as the EndpointSlice controller does.
func (e *env) changeOneEndpoint(ctx context.Context, namespace, name string, round int) error {
	client := e.cluster.Admin.DiscoveryV1().EndpointSlices(namespace)
	slice, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	last := &slice.Endpoints[len(slice.Endpoints)-1]
	last.Addresses = []string{fmt.Sprintf("10.127.%d.%d", round>>8, round&0xff)}
	if slice.Annotations == nil {
		slice.Annotations = map[string]string{}
	}
	slice.Annotations[corev1.EndpointsLastChangeTriggerTime] = time.Now().UTC().Format(time.RFC3339Nano)
	_, err = client.Update(ctx, slice, metav1.UpdateOptions{})
	return err
}

// histTotals are a process's count and sum of a histogram.
type histTotals struct{ count, sum float64 }

// readTotals reads both processes' count and sum of a histogram.
func readTotals(ctx context.Context, both [2]*watched, count, sum string) ([2]histTotals, error) {
	var out [2]histTotals
	for i, w := range both {
		body, err := w.scrape(ctx)
		if err != nil {
			return out, err
		}
		out[i] = histTotals{MetricSum(body, count), MetricSum(body, sum)}
	}
	return out, nil
}

// waitProgrammed waits until both have counted one more network
// programming latency than before, and takes each one's sample from the
// rise of its histogram's sum.
func waitProgrammed(ctx context.Context, both [2]*watched, before [2]histTotals) error {
	deadline := time.Now().Add(2 * time.Minute)
	var done [2]bool
	for !done[0] || !done[1] {
		now, err := readTotals(ctx, both, latencyCount, latencySum)
		if err != nil {
			return err
		}
		for i, w := range both {
			switch {
			case done[i] || now[i].count == before[i].count:
			case now[i].count != before[i].count+1:
				return fmt.Errorf("%s: %s went from %v to %v for one change", w.name, latencyCount, before[i].count, now[i].count)
			default:
				w.latencies = append(w.latencies, now[i].sum-before[i].sum)
				done[i] = true
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("one endpoint change not programmed by both in 2 minutes (done: kube-proxy %v, tool %v)", done[0], done[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// watchSamples pools the runs of one benchmark.
type watchSamples struct {
	kp, tool []*watched
}

func (s *watchSamples) add(both [2]*watched) {
	s.kp = append(s.kp, both[0])
	s.tool = append(s.tool, both[1])
}

// report reports the latency percentiles over every run's samples, and
// the mean of the runs' CPU, peak RSS and first sync.
func (s *watchSamples) report(b *testing.B) {
	for _, p := range []struct {
		short string
		runs  []*watched
	}{{"kp", s.kp}, {"tool", s.tool}} {
		if len(p.runs) == 0 {
			return
		}
		var lat []float64
		var cpu, self, rss, first float64
		var syncs histTotals
		for _, w := range p.runs {
			syncs.count += w.syncs.count
			syncs.sum += w.syncs.sum
			lat = append(lat, w.latencies...)
			self += w.usage.CPU.Seconds()
			cpu += (w.usage.CPU + w.usage.ChildrenCPU).Seconds()
			rss += float64(w.usage.PeakRSS) / 1e6
			first += w.firstSync.Seconds()
		}
		runs := float64(len(p.runs))
		b.ReportMetric(percentile(lat, 50)*1000, p.short+"-p50-ms")
		b.ReportMetric(percentile(lat, 99)*1000, p.short+"-p99-ms")
		b.ReportMetric(syncs.sum/syncs.count*1000, p.short+"-sync-ms")
		b.ReportMetric(cpu/runs, p.short+"-cpu-s")
		b.ReportMetric(rss/runs, p.short+"-rss-MB")
		b.ReportMetric(first/runs, p.short+"-sync1-s")
		b.Logf("%s: %d changes, latencies %s ms; %v syncs meanwhile taking %.0f ms; CPU %.2f s of which its own %.2f s",
			p.runs[0].name, len(lat), millis(lat), syncs.count, syncs.sum*1000, cpu/runs, self/runs)
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
