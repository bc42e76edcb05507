package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// TestMetricsLikeKubeProxy runs the real kube-proxy v1.37.2 and `kubectl
// svcproxy apply --watch` side by side over the same objects, in each
// mode, lets both sync, answer /healthz and /livez and program one
// endpoint change, and then compares what both export on /metrics: every
// family kube-proxy has must be in the tool's, with the same type, label
// names and histogram buckets, bar metricAllowList.
func TestMetricsLikeKubeProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and kube-proxy (-short)")
	}
	e := newEnv(t)
	s, snap := e.healthCheckScenario(t)
	for _, m := range Modes {
		t.Run(string(m), func(t *testing.T) { e.compareMetrics(t, s, snap, m) })
	}
}

// compareMetrics is TestMetricsLikeKubeProxy in one mode.
func (e *env) compareMetrics(t *testing.T, s *Scenario, snap *cluster.Snapshot, m Mode) {
	ctx := context.Background()
	e.reload(t, snap)
	p := e.startSyncedPair(t, s, snap, m)
	if err := p.WaitQuiet(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// Each health endpoint answered once, so that both count it.
	for _, w := range p {
		for _, path := range []string{"/healthz", "/livez"} {
			if _, err := GetInNS(ctx, w.ns, "http://"+healthzAddr+path); err != nil {
				t.Fatalf("%s %s: %v", w.Name, path, err)
			}
		}
	}
	before, err := p.readTotals(ctx, latencyCount, latencySum)
	if err != nil {
		t.Fatal(err)
	}
	if err := addLocalEndpoint(ctx, e, "zero"); err != nil {
		t.Fatal(err)
	}
	if err := p.waitProgrammed(ctx, before); err != nil {
		t.Fatalf("%v\nkube-proxy:\n%s\ntool:\n%s", err, p[0].Tail(20), p[1].Tail(20))
	}
	var shapes [2]map[string]MetricShape
	var bodies [2][]byte
	for i, w := range p {
		body, err := w.scrape(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if shapes[i], err = ParseMetricShapes(body); err != nil {
			t.Fatalf("%s's /metrics: %v", w.Name, err)
		}
		bodies[i] = body
	}
	compareValues(t, bodies, "kubeproxy_sync_proxy_rules_no_local_endpoints_total", "kubeproxy_proxy_healthz_total",
		"kubeproxy_proxy_livez_total", "kubeproxy_sync_proxy_rules_iptables_total")
	t.Logf("kube-proxy exports %d families:\n%s", len(shapes[0]), listShapes(shapes[0]))
	if diff := CompareMetricShapes(shapes[0], shapes[1], m, metricAllowList); len(diff) > 0 {
		t.Errorf("%d of kube-proxy's metric families are missing from the tool's /metrics, or differ:\n%s\nthe tool's:\n%s",
			len(diff), strings.Join(diff, "\n"), listShapes(shapes[1]))
	}
}

// addLocalEndpoint gives Service name of the "hc" namespace an
// EndpointSlice with one ready endpoint on node1, stamped with the time
// of the change as the EndpointSlice controller stamps it.
func addLocalEndpoint(ctx context.Context, e *env, name string) error {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics", Namespace: "hc",
			Labels:      map[string]string{discoveryv1.LabelServiceName: name},
			Annotations: map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.12"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}, NodeName: ptr("node1")}},
	}
	_, err := e.cluster.Admin.DiscoveryV1().EndpointSlices("hc").Create(ctx, slice, metav1.CreateOptions{})
	return err
}

// listShapes is one line per family, sorted by name.
func listShapes(shapes map[string]MetricShape) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(shapes)) {
		fmt.Fprintf(&b, "  %s %s\n", name, shapes[name])
	}
	return b.String()
}

// compareValues fails on any series of the named families whose value
// differs between kube-proxy's and the tool's /metrics: they count the
// same objects, rules and requests. (sync_proxy_rules_iptables_last is
// not among them: kube-proxy rewrites whole chains, the tool only what
// changed.)
func compareValues(t *testing.T, bodies [2][]byte, names ...string) {
	t.Helper()
	for _, name := range names {
		var vals [2]map[string]float64
		for i, b := range bodies {
			var err error
			if vals[i], err = SeriesValues(b, name); err != nil {
				t.Fatal(err)
			}
		}
		if !maps.Equal(vals[0], vals[1]) {
			t.Errorf("%s: kube-proxy %v, tool %v", name, vals[0], vals[1])
		} else {
			t.Logf("%s alike: %v", name, vals[0])
		}
	}
}
