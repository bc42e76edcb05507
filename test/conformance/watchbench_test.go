package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
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
// the time to the first sync, seen by polling every 250 ms, and its load
// on the API server: requests (its rest_client_requests_total) and the
// bytes received through its bridge. The tool's load must be at most
// kube-proxy's (CheckAPILoad). 100
// Services by default; SVCPROXY_BENCH_SIZES=1000,10000 for more.
func BenchmarkWatchLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("starts kube-apiserver and kube-proxy (-short)")
	}
	for _, n := range WatchBenchSizes(b) {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			e := newEnv(b)
			toolbin.Path(b) // built before anything is timed
			s, snap := e.loadSynthetic(b, n)
			for _, m := range Modes {
				b.Run(string(m), func(b *testing.B) {
					var samples WatchSamples
					for b.Loop() {
						samples.Add(e.watchRun(b, s, snap, m, n))
					}
					samples.Report(b)
				})
			}
		})
	}
}

// watchRun is one run: both proxies started, synced, changed, measured
// and stopped.
func (e *env) watchRun(b *testing.B, s *Scenario, snap *cluster.Snapshot, m Mode, n int) Pair {
	ctx := context.Background()
	p := Pair{e.startWatched(b, s, snap, m, "kube-proxy"), e.startWatched(b, s, snap, m, "kubectl-svcproxy")}
	firstSyncCap := max(3*time.Minute, time.Duration(n/1000)*time.Minute)
	if err := p.WaitFirstSync(ctx, firstSyncCap); err != nil {
		b.Logf("tool's first sync: %v", p[1].FirstSync)
		b.Skipf("%v (capped at %v: not measured)", err, firstSyncCap)
	}
	if err := p.WaitQuiet(ctx, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	for _, w := range p {
		var err error
		if w.APIStart, err = w.apiLoad(ctx); err != nil {
			b.Fatal(err)
		}
	}
	changes := 20
	if n <= 100 {
		changes = 10 // keeps CI's single run short
	}
	if err := p.Measure(ctx, e.cluster.Admin, n, changes); err != nil {
		b.Fatal(err)
	}
	if err := p.CheckAPILoad(); err != nil {
		b.Errorf("%v\nkube-proxy: %s\ntool: %s", err, p[0].API, p[1].API)
	}
	return p
}

// startWatched starts kube-proxy, or the tool with `apply --watch`, in a
// fresh node namespace with the scenario's kube-proxy configuration file
// for mode m; its API server bridge, and the metrics and healthz servers
// on the namespace's loopback, are the only things of its own.
func (e *env) startWatched(b testing.TB, s *Scenario, snap *cluster.Snapshot, m Mode, name string) *Watched {
	ns := node(b, s, snap)
	config, bridge, err := e.kubeProxyConfigVia(b, s, m, ns, false)
	if err != nil {
		b.Fatal(err)
	}
	var w *Watched
	if name == "kube-proxy" {
		w, err = WatchKubeProxy(ns, e.kubeProxy, config, b.TempDir())
	} else {
		w, err = WatchTool(ns, toolbin.Path(b), config, b.TempDir())
	}
	if err != nil {
		b.Fatal(err)
	}
	w.bridge = bridge
	b.Cleanup(w.Stop)
	return w
}
