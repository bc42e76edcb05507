package cli

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/lock"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// The watch test's periods: short, so that the test stays within seconds.
const (
	e2eMinSyncPeriod = time.Second
	e2eSyncPeriod    = 3 * time.Second
)

// TestWatchE2E runs `apply --watch` inside a lab's node namespace as the
// shipped RBAC's identity, against a real kube-apiserver reached through a
// bridge, and checks what kube-proxy's sync loop promises: a burst of
// changes is batched into few syncs, a rule deleted by hand comes back
// within the sync period, an API server outage keeps the rules and the
// loop recovers, a failing sync shows on /healthz, and the metrics carry
// kube-proxy's names. It does so in each mode, one after the other, each
// with an API server of its own: the phases build on the cluster state the
// ones before left.
func TestWatchE2E(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	forEachMode(t, testWatchMode)
}

// testWatchMode is TestWatchE2E in mode m.
func testWatchMode(t *testing.T, m e2eMode) {
	n := newE2ENode(t, "nft") // skips (fails under CI) unless root with iptables-nft
	c := testcluster.StartWithRBAC(t)
	c.Apply(t, clusterE2EObjects) // node1 and web (10.96.0.10) with two endpoints
	for ip, name := range map[string]string{"10.244.0.11": "web-11", "10.244.1.12": "web-12"} {
		if err := n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	bridge := c.NewBridge(t, n.lab.Node())
	tool := startWatch(t, n, bridge.Kubeconfig(t, c.UserKubeconfig), append(m.args(),
		"--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4",
		"--min-sync-period="+e2eMinSyncPeriod.String(), "--sync-period="+e2eSyncPeriod.String(),
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256")...)
	tool.waitLog(t, "Caches synced", 30*time.Second)
	tool.waitFor(t, "the initial sync", 10*time.Second, func() bool { return tool.metric(`svcproxy_syncs_total{result="changed",trigger="initial"}`) == 1 })
	assertSpread(t, n, "web-11", "web-12")

	t.Run("BurstIsBatched", func(t *testing.T) { testWatchBurst(t, n, m, fastClient(t, c.AdminKubeconfig), tool) })
	t.Run("DriftIsRepaired", func(t *testing.T) { testWatchDrift(t, n, m, tool, "10.96.1.1") })
	t.Run("APIServerOutage", func(t *testing.T) { testWatchOutage(t, n, m, c.Admin, tool, bridge) })
	t.Run("FailingSyncFailsHealthz", func(t *testing.T) { testWatchFailingSync(t, n, c.Admin, tool) })
	t.Run("NetworkProgrammingLatency", func(t *testing.T) { testWatchLatency(t, c.Admin, tool) })
	t.Run("Endpoints", func(t *testing.T) { testWatchEndpoints(t, m, tool) })
	if code := tool.stop(); code != 0 || !strings.Contains(tool.output(), "\"Stopped\"") {
		t.Fatalf("SIGTERM: exit %d, want 0 and a clean stop:\n%s", code, tool.output())
	}
	assertCacheSaved(t, n, m)
}

// assertCacheSaved checks that a watch leaves the cache file of its mode
// in --state-dir when it stops: in watch mode the files are held back
// while syncs change the kernel and written when idle or at the end, and
// the next run of a command (an operator's plan) reads them.
func assertCacheSaved(t *testing.T, n *e2eNode, m e2eMode) {
	t.Helper()
	want := map[string]string{"iptables": "iptables-nft-ipv4.rules", "nftables": "nftables-ip-kube-proxy.table"}[m.name()]
	if want == "" {
		return // ipvs and userspace keep no cache of their own
	}
	found, err := filepath.Glob(filepath.Join(n.dir, "state", "netns-*", "*", want))
	if err == nil && len(found) == 0 {
		found, err = filepath.Glob(filepath.Join(n.dir, "state", "netns-*", want))
	}
	if err != nil || len(found) != 1 {
		t.Errorf("after the watch stopped, --state-dir holds %v for %s (err %v), want one file", found, want, err)
	}
}

// fastClient is a client without client-go's default rate limit (5
// requests a second), so that a burst is a burst.
func fastClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	return kubernetes.NewForConfigOrDie(cfg)
}

// burstSize is how many Services the burst creates.
const burstSize = 100

// burstIP is the ClusterIP of the i-th Service of the burst.
func burstIP(i int) string { return fmt.Sprintf("10.96.1.%d", i+1) }

// testWatchBurst creates burstSize Services, each with an EndpointSlice
// on web-11, as fast as the API server takes them, and counts the syncs
// until all of them are in the kernel. A periodic sync may fall in the
// window too; the bound holds for all syncs.
func testWatchBurst(t *testing.T, n *e2eNode, m e2eMode, admin kubernetes.Interface, tool *bgProc) {
	// Start with the loop idle: the first event then syncs at once, and the
	// rest of the burst has to wait for the next sync.
	time.Sleep(e2eMinSyncPeriod)
	before := tool.metric("svcproxy_syncs_total")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, burstSize)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < burstSize; i += 8 {
				if err := createService(t.Context(), admin, fmt.Sprintf("svc-%d", i), burstIP(i), "10.244.0.11"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	burst := time.Since(start)
	tool.waitFor(t, "all Services in the kernel", 30*time.Second, func() bool {
		chains := m.serviceChains(m.list(n))
		for i := range burstSize {
			if chains[burstIP(i)] == "" {
				return false
			}
		}
		return true
	})
	applied := time.Since(start)
	// Syncs still under way for the last events end within a min-sync-period.
	time.Sleep(e2eMinSyncPeriod + 500*time.Millisecond)
	window := time.Since(start)
	syncs := int(tool.metric("svcproxy_syncs_total") - before)
	// The loop's bound: at most one sync per min-sync-period, plus one.
	limit := int(window/e2eMinSyncPeriod) + 1
	t.Logf("%d Services created in %v, all applied after %v, by %d syncs (limit %d in %v)",
		burstSize, burst.Round(time.Millisecond), applied.Round(time.Millisecond), syncs, limit, window.Round(time.Millisecond))
	if syncs < 1 || syncs > limit || syncs > 10 {
		t.Fatalf("%d syncs for %d Services, want 1..%d", syncs, burstSize, min(limit, 10))
	}
	for _, i := range []int{0, burstSize / 2, burstSize - 1} {
		dst := netip.MustParseAddrPort(burstIP(i) + ":80")
		if got, err := n.lab.Client().DialTCP(t.Context(), dst, netlab.DefaultTimeout); err != nil || got != "web-11" {
			t.Errorf("%s: %q, %v; want web-11", dst, got, err)
		}
	}
}

// createService writes Service name (port 80 to 8080) with clusterIP and
// its EndpointSlice name-1 with the endpoints, ready, on node1.
func createService(ctx context.Context, client kubernetes.Interface, name, clusterIP string, endpoints ...string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
		}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	port, proto, portName := int32(8080), corev1.ProtocolTCP, "http"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}},
		Endpoints:   readyEndpoints(endpoints),
	}
	_, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
	return err
}

// readyEndpoints are ready endpoints on node1 at addrs, one each.
func readyEndpoints(addrs []string) []discoveryv1.Endpoint {
	eps := []discoveryv1.Endpoint{}
	for _, a := range addrs {
		ready, node := true, "node1"
		eps = append(eps, discoveryv1.Endpoint{
			Addresses: []string{a}, NodeName: &node, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	return eps
}

// testWatchDrift deletes the per-service chain of the Service at
// clusterIP by hand and waits for the periodic sync to bring it back.
func testWatchDrift(t *testing.T, n *e2eNode, m e2eMode, tool *bgProc, clusterIP string) {
	before := tool.metric("svcproxy_drift_repaired_total")
	chain := deleteServiceChain(t, n, m, clusterIP)
	deleted := time.Now()
	dst := netip.MustParseAddrPort(clusterIP + ":80")
	tool.waitFor(t, "the chain to come back", e2eSyncPeriod+5*time.Second, func() bool {
		return m.hasChain(m.list(n), chain)
	})
	took := time.Since(deleted)
	if got, err := n.lab.Client().DialTCP(t.Context(), dst, netlab.DefaultTimeout); err != nil || got != "web-11" {
		t.Errorf("%s after the repair: %q, %v; want web-11", dst, got, err)
	}
	tool.waitFor(t, "the drift metric", 2*time.Second, func() bool { return tool.metric("svcproxy_drift_repaired_total") == before+1 })
	t.Logf("%s deleted by hand, repaired after %v (sync period %v)", chain, took.Round(time.Millisecond), e2eSyncPeriod)
	if took > e2eSyncPeriod+2*time.Second {
		t.Errorf("repaired after %v, want within the sync period %v (and the sync's own time)", took, e2eSyncPeriod)
	}
}

// testWatchOutage cuts the bridge to the API server: the tool keeps its
// rules, keeps repairing drift from its cache and stays healthy (no change
// is pending that it could apply). A Service created during the outage is
// applied once the bridge is back.
func testWatchOutage(t *testing.T, n *e2eNode, m e2eMode, admin kubernetes.Interface, tool *bgProc, bridge *testcluster.Bridge) {
	errorsBefore := tool.metric("svcproxy_apiserver_request_errors_total")
	bridge.Cut()
	defer bridge.Restore(t) // on failure too, for the phases after this one
	cut := time.Now()
	tool.waitFor(t, "the tool to notice", 10*time.Second, func() bool {
		return tool.metric("svcproxy_apiserver_request_errors_total") > errorsBefore
	})
	if err := createService(t.Context(), admin, "during-outage", "10.96.2.1", "10.244.1.12"); err != nil {
		t.Fatal(err)
	}
	// The last applied state stands, and drift is still repaired.
	testWatchDrift(t, n, m, tool, burstIP(1))
	assertSpread(t, n, "web-11", "web-12")
	if code, body := tool.get("127.0.0.1:10256", "/healthz"); code != 200 {
		t.Errorf("/healthz during the outage: %d %s, want 200: no change is pending", code, body)
	}
	outage := time.Since(cut)
	bridge.Restore(t)
	restored := time.Now()
	dst := netip.MustParseAddrPort("10.96.2.1:80")
	tool.waitFor(t, "the Service created during the outage", 40*time.Second, func() bool {
		got, err := n.lab.Client().DialTCP(t.Context(), dst, 500*time.Millisecond)
		return err == nil && got == "web-12"
	})
	t.Logf("API server cut off for %v (%v failed requests); the Service created meanwhile was applied %v after it came back",
		outage.Round(time.Millisecond), tool.metric("svcproxy_apiserver_request_errors_total")-errorsBefore, time.Since(restored).Round(time.Millisecond))
	for _, line := range []string{"Cannot reach the API server", "The API server answers again"} {
		if !strings.Contains(tool.output(), line) {
			t.Errorf("the log lacks %q", line)
		}
	}
}

// testWatchFailingSync holds the tool's lock, as a cron run of apply
// would, so that syncs fail: /healthz turns 503 once a change has waited
// twice the sync period, and 200 again once the lock is free and the
// retry applied it.
func testWatchFailingSync(t *testing.T, n *e2eNode, admin kubernetes.Interface, tool *bgProc) {
	l, err := lock.Acquire(n.lockFile(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	errorsBefore := tool.metric("svcproxy_sync_errors_total")
	if err := createService(t.Context(), admin, "while-locked", "10.96.2.2", "10.244.0.11"); err != nil {
		t.Fatal(err)
	}
	queued := time.Now()
	tool.waitFor(t, "/healthz to fail", 2*e2eSyncPeriod+5*time.Second, func() bool {
		code, _ := tool.get("127.0.0.1:10256", "/healthz")
		return code == 503
	})
	unhealthy := time.Since(queued)
	if unhealthy < 2*e2eSyncPeriod-500*time.Millisecond {
		t.Errorf("/healthz failed %v after the change, want after 2 × the sync period %v", unhealthy, e2eSyncPeriod)
	}
	if errs := tool.metric("svcproxy_sync_errors_total") - errorsBefore; errs < 2 || !strings.Contains(tool.output(), "lock held by another run") {
		t.Errorf("%v sync errors while the lock was held, want retries logged as such", errs)
	}
	l.Release()
	released := time.Now()
	tool.waitFor(t, "/healthz to recover", e2eSyncPeriod+5*time.Second, func() bool {
		code, _ := tool.get("127.0.0.1:10256", "/healthz")
		return code == 200
	})
	t.Logf("/healthz failed %v after the change was queued, recovered %v after the lock was released",
		unhealthy.Round(time.Millisecond), time.Since(released).Round(time.Millisecond))
	dst := netip.MustParseAddrPort("10.96.2.2:80")
	if got, err := n.lab.Client().DialTCP(t.Context(), dst, netlab.DefaultTimeout); err != nil || got != "web-11" {
		t.Errorf("%s after the retry: %q, %v; want web-11", dst, got, err)
	}
}

// testWatchEndpoints checks the names and values the endpoints serve,
// after the phases before it.
func testWatchEndpoints(t *testing.T, mode e2eMode, tool *bgProc) {
	// Left alone, the loop syncs every period and finds nothing to do.
	tool.waitFor(t, "an idle periodic sync", e2eSyncPeriod+3*time.Second, func() bool {
		return tool.metric(`svcproxy_syncs_total{result="unchanged",trigger="periodic"}`) >= 1
	})
	code, body := tool.get("127.0.0.1:10249", "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	// (The failure counters have a series, and so a # TYPE line, only
	// after a failure; test/conformance compares every family with
	// kube-proxy's.)
	for _, typ := range []string{
		"kubeproxy_sync_proxy_rules_duration_seconds histogram",
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge",
		"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds gauge",
		"kubeproxy_sync_proxy_rules_service_changes_total counter",
		"kubeproxy_sync_proxy_rules_endpoint_changes_total counter",
		"kubeproxy_proxy_healthz_total counter",
		"kubeproxy_network_programming_duration_seconds histogram",
		"kubeproxy_sync_proxy_rules_service_changes_pending gauge",
		"kubeproxy_sync_proxy_rules_endpoint_changes_pending gauge",
		"kubernetes_build_info gauge",
		"rest_client_requests_total counter",
		"svcproxy_syncs_total counter",
		"svcproxy_sync_errors_total counter",
		"svcproxy_drift_repaired_total counter",
		"svcproxy_applied_changes_total counter",
		"svcproxy_apiserver_request_errors_total counter",
	} {
		if !strings.Contains(body, "# TYPE "+typ+"\n") {
			t.Errorf("/metrics lacks # TYPE %s", typ)
		}
	}
	now := float64(time.Now().Unix())
	for _, m := range []struct {
		name    string
		atLeast float64
	}{
		{"kubeproxy_sync_proxy_rules_duration_seconds_count", 5},
		{"kubeproxy_sync_proxy_rules_last_timestamp_seconds", now - 2*e2eSyncPeriod.Seconds()},
		{"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", now - 60},
		// kubernetes and web, the burst, during-outage and while-locked.
		{"kubeproxy_sync_proxy_rules_service_changes_total", burstSize + 4},
		{"kubeproxy_sync_proxy_rules_endpoint_changes_total", burstSize + 3},
		{`kubeproxy_proxy_healthz_total{code="200"}`, 1},
		{`kubeproxy_proxy_healthz_total{code="503"}`, 1},
		{`svcproxy_syncs_total{result="changed",trigger="initial"}`, 1},
		{`svcproxy_syncs_total{result="changed",trigger="event"}`, 2},
		{`svcproxy_syncs_total{result="changed",trigger="periodic"}`, 2},
		{`svcproxy_syncs_total{result="error",trigger="retry"}`, 1},
		{"svcproxy_drift_repaired_total", 2},
		{"svcproxy_apiserver_request_errors_total", 1},
		{"process_start_time_seconds", now - 300},
	} {
		if got := parseMetric(body, m.name); got < m.atLeast {
			t.Errorf("%s = %v, want ≥ %v", m.name, got, m.atLeast)
		}
	}
	// What the burst's Services added to the kernel.
	for name, each := range mode.perService() {
		if got := parseMetric(body, name); got < each*burstSize {
			t.Errorf("%s = %v, want ≥ %v: %v for each of the burst's %d Services", name, got, each*burstSize, each, burstSize)
		}
	}
	if code, got := tool.get("127.0.0.1:10249", "/proxyMode"); code != 200 || got != mode.name() {
		t.Errorf("/proxyMode: %d %q, want %q", code, got, mode.name())
	}
	for _, path := range []string{"/healthz", "/livez"} {
		code, body := tool.get("127.0.0.1:10256", path)
		if code != 200 || !strings.Contains(body, `"lastUpdated":"`) || !strings.Contains(body, `"currentTime":"`) || !strings.Contains(body, `"healthy":true`) {
			t.Errorf("%s: %d %s", path, code, body)
		}
		if eligible := strings.Contains(body, `"nodeEligible":true`); eligible != (path == "/healthz") {
			t.Errorf("%s: %s, nodeEligible should be in /healthz only", path, body)
		}
	}
}
