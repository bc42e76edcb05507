package cli

import (
	"fmt"
	"strings"
	"time"
)

// The soak's phases on the test's goroutine: drift, restarts, and the
// checks and figures at the end.

// drift deletes the per-service chain of the next drift target by hand,
// as testWatchDrift does, and waits until the tool has put it back; the
// Service must answer then. The drift targets are unchanged Services too,
// but not probed all along: until the repair their connections fail, by
// design.
func (s *soak) drift() {
	s.t.Helper()
	svc := soakDriftTargets[s.drifts%len(soakDriftTargets)]
	chain := s.m.dropServiceChain(s.t, s.n, svc.ip)
	dropped := time.Now()
	s.tool.waitFor(s.t, fmt.Sprintf("drift %d (%s of %s) to be repaired", s.drifts+1, chain, svc.name), soakRepairBound, func() bool {
		listing := s.m.list(s.n)
		return s.m.serviceChains(listing)[svc.ip] == chain && s.m.hasChain(listing, chain)
	})
	took := time.Since(dropped)
	s.drifts++
	s.driftSum += took
	s.driftMax = max(s.driftMax, took)
	s.waitAnswers(svc, 5*time.Second)
}

// restart stops kube-apiserver, with the churn held off, and checks that
// the tool keeps its rules and repairs drift from its cache meanwhile;
// then it starts the server again and measures how long a Service created
// after that takes to answer.
func (s *soak) restart() {
	s.t.Helper()
	s.gate.Lock()
	locked := true
	defer func() {
		if locked {
			s.gate.Unlock()
		}
	}()
	errs := s.tool.metric("svcproxy_apiserver_request_errors_total")
	begin := time.Now()
	s.c.StopAPIServer()
	s.tool.waitFor(s.t, "the tool to notice the API server's absence", 20*time.Second, func() bool {
		return s.tool.metric("svcproxy_apiserver_request_errors_total") > errs
	})
	s.drift()
	if code, body := s.tool.get("127.0.0.1:10256", "/healthz"); code != 200 {
		s.t.Errorf("/healthz with the API server down: %d %s, want 200: no change is pending", code, body)
	}
	down := time.Since(begin)
	s.c.StartAPIServer(s.t)
	back := time.Now()
	s.gate.Unlock()
	locked = false

	svc := restartService(len(s.restarts))
	if err := createService(s.t.Context(), s.admin, svc.name, svc.ip, svc.endpoints...); err != nil {
		s.t.Fatal(err)
	}
	s.waitAnswers(svc, soakAppliedBound)
	s.churnAtRestart = s.churn.ops.Load()
	s.restarts = append(s.restarts, fmt.Sprintf("down %v, %s answered %v after the server was back",
		down.Round(100*time.Millisecond), svc.name, time.Since(back).Round(100*time.Millisecond)))
}

// soakMetrics are the tool's series the soak reports, as deltas.
var soakMetrics = []string{
	"svcproxy_syncs_total",
	"svcproxy_sync_errors_total",
	"svcproxy_drift_repaired_total",
	"svcproxy_apiserver_request_errors_total",
	"svcproxy_watch_errors_total",
	"kubeproxy_sync_proxy_rules_service_changes_total",
	"kubeproxy_sync_proxy_rules_endpoint_changes_total",
}

// metrics reads soakMetrics from the tool; a series not there yet is 0.
func (s *soak) metrics() map[string]float64 {
	s.t.Helper()
	code, body := s.tool.get("127.0.0.1:10249", "/metrics")
	if code != 200 {
		s.t.Fatalf("/metrics: %d %s", code, body)
	}
	m := map[string]float64{}
	for _, name := range soakMetrics {
		m[name] = max(0, parseMetric(body, name))
	}
	return m
}

// finish checks that the kernel converged on the API state, logs the
// figures and checks them, and stops the tool.
func (s *soak) finish() {
	t := s.t
	ran := time.Since(s.start)
	converged := s.converge()
	after := s.metrics()
	delta := func(name string) float64 { return after[name] - s.before[name] }
	t.Logf("soak figures, %s mode, %v:", s.m.name(), ran.Round(time.Second))
	failed := s.reportConnections()
	t.Logf("  churn: %s; %d since the last restart", s.churn, s.churn.ops.Load()-s.churnAtRestart)
	t.Logf("  API server restarts: %d: %s", len(s.restarts), strings.Join(s.restarts, "; "))
	mean := time.Duration(0)
	if s.drifts > 0 {
		mean = s.driftSum / time.Duration(s.drifts)
	}
	t.Logf("  drift: %d injected by hand, all repaired, in %v at most (mean %v); svcproxy_drift_repaired_total +%v",
		s.drifts, s.driftMax.Round(time.Millisecond), mean.Round(time.Millisecond), delta("svcproxy_drift_repaired_total"))
	slope, limit, rssLine := s.rssFigures()
	t.Logf("  RSS: %s", rssLine)
	t.Logf("  syncs +%v (errors +%v); Service events +%v, EndpointSlice events +%v; API requests failed +%v, watch errors +%v",
		delta("svcproxy_syncs_total"), delta("svcproxy_sync_errors_total"),
		delta("kubeproxy_sync_proxy_rules_service_changes_total"), delta("kubeproxy_sync_proxy_rules_endpoint_changes_total"),
		delta("svcproxy_apiserver_request_errors_total"), delta("svcproxy_watch_errors_total"))
	t.Logf("  converged: plan against the API found nothing to change %v after the churn stopped", converged.Round(100*time.Millisecond))

	if failed > 0 {
		t.Errorf("%d connections to unchanged Services failed", failed)
	}
	if delta("svcproxy_drift_repaired_total") < 1 {
		t.Errorf("svcproxy_drift_repaired_total did not rise, though %d drifts were repaired", s.drifts)
	}
	if slope >= limit {
		t.Errorf("RSS grows by %.0f KB/min over the second half, limit %.0f", slope, limit)
	}
	if len(s.restarts) == 0 || s.churn.ops.Load() == s.churnAtRestart {
		t.Errorf("the churn did not go on after the last API server restart (%d restarts)", len(s.restarts))
	}
	if code := s.tool.stop(); code != 0 {
		t.Errorf("apply --watch: exit %d after SIGTERM, want 0", code)
	}
}

// reportConnections logs the probers' counts, and the first failed and
// late probes, and returns how many failed.
func (s *soak) reportConnections() int64 {
	ok, failed, late := int64(0), int64(0), int64(0)
	var perService, failures, lates []string
	for _, p := range s.probers {
		ok, failed, late = ok+p.ok.Load(), failed+p.failed.Load(), late+p.late.Load()
		perService = append(perService, fmt.Sprintf("%s %d/%d/%d", p.name, p.ok.Load(), p.failed.Load(), p.late.Load()))
		failures, lates = append(failures, p.failures...), append(lates, p.lates...)
	}
	s.t.Logf("  connections to unchanged Services: %d ok, %d failed, %d late (ok/failed/late: %s)", ok, failed, late, strings.Join(perService, ", "))
	if late > 0 {
		s.t.Logf("  late, the network answered in time but the prober did not run (the first few):\n%s", strings.Join(lates, "\n"))
	}
	if failed > 0 {
		s.t.Logf("  failed (the first few):\n%s", strings.Join(failures, "\n"))
	}
	return failed
}

// converge waits, after the churn stopped, until plan, reading the
// kernel afresh (no --state-dir cache) and the API server, finds nothing
// to change: no change was lost on the way.
func (s *soak) converge() time.Duration {
	s.t.Helper()
	begin := time.Now()
	args := append([]string{"--kubeconfig=" + s.kubeconfig, "--state-dir="}, s.m.args()...)
	args = append(args, "--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4")
	for {
		r := s.n.run("plan", args...)
		switch {
		case r.code == ExitOK:
			return time.Since(begin)
		case r.code != ExitChanges || time.Since(begin) > 2*soakSyncPeriod:
			s.t.Fatalf("the kernel does not match the API state %v after the churn stopped:\n%s", time.Since(begin).Round(time.Millisecond), r)
		}
		time.Sleep(time.Second)
	}
}

// rssFigures returns the RSS slope over the second half of the run, in
// KB/min, its limit for that window (see soakRSSStep), and a line with
// the figures.
func (s *soak) rssFigures() (slope, limit float64, line string) {
	s.t.Helper()
	s.rss.mu.Lock()
	defer s.rss.mu.Unlock()
	all := s.rss.samples
	if s.rss.err != nil || len(all) < 4 {
		s.t.Fatalf("RSS of PID %d: %d samples, error %v", s.rss.pid, len(all), s.rss.err)
	}
	half := all[len(all)/2:]
	peak := 0.0
	for _, x := range all {
		peak = max(peak, x.kb)
	}
	slope = slopePerMinute(half)
	window := half[len(half)-1].at - half[0].at
	limit = soakRSSSlopeLimit + 1.5*soakRSSStep/window.Minutes()
	return slope, limit, fmt.Sprintf("first %.1f MB, last %.1f MB, peak %.1f MB; slope over the second half (%d samples over %v) %+.0f KB/min (limit %.0f)",
		all[0].kb/1024, all[len(all)-1].kb/1024, peak/1024, len(half), window.Round(time.Second), slope, limit)
}
