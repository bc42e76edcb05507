package watch

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func slice(ns, svc, name string, trigger time.Time) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4}
	if !trigger.IsZero() {
		s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: trigger.Format(time.RFC3339Nano)}
	}
	return s
}

// histogram returns the IPv4 latency histogram's count, sum and the
// count of its bucket with upper bound le; zeros before its first sample.
func histogram(t *testing.T, m *metrics, le float64) (count uint64, sum float64, inBucket uint64) {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metricNetworkProgramming {
			continue
		}
		s := f.GetMetric()[0]
		if len(f.GetMetric()) != 1 || !hasLabels(s, []string{"ip_family", "IPv4"}) {
			t.Fatalf("%s: %v, want one IPv4 series", metricNetworkProgramming, f.GetMetric())
		}
		h := s.GetHistogram()
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == le {
				inBucket = b.GetCumulativeCount()
			}
		}
		return h.GetSampleCount(), h.GetSampleSum(), inBucket
	}
	return 0, 0, 0
}

func TestNetworkProgrammingLatency(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	m := newMetrics("iptables", svcmetrics.Build{})
	tr := newChangeTracker(m, clock.Now(), []nodetable.Family{nodetable.IPv4})
	before := clock.Now().Add(-time.Minute)
	t0 := clock.Now().Add(time.Second)
	clock.Step(2 * time.Second)

	tr.changed(resEndpointSlices, slice("ns", "web", "web-1", t0), false)
	tr.changed(resEndpointSlices, slice("ns", "web", "web-2", t0.Add(500*time.Millisecond)), false)
	tr.changed(resEndpointSlices, slice("ns", "db", "db-1", before), false) // before the start: not ours
	tr.changed(resEndpointSlices, slice("ns", "db", "db-2", time.Time{}), false)
	gone := slice("ns", "old", "old-1", t0)
	tr.changed(resEndpointSlices, gone, false)
	tr.changed(resEndpointSlices, cache.DeletedFinalStateUnknown{Key: "ns/old-1", Obj: gone}, true)
	tr.changed(resServices, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, false)
	tr.changed(resServices, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, false)
	if got := gathered(t, m, metricEndpointChangesPending); got != 6 {
		t.Errorf("endpoint changes pending: %v, want 6", got)
	}
	if got := gathered(t, m, metricServiceChangesPending); got != 1 {
		t.Errorf("service changes pending: %v, want 1 (one Service changed twice)", got)
	}

	// A sync takes the changes; it fails, and the retry applies them.
	times := tr.checkout()
	if got := gathered(t, m, metricEndpointChangesPending) + gathered(t, m, metricServiceChangesPending); got != 0 {
		t.Errorf("pending after the sync began: %v, want 0", got)
	}
	clock.Step(time.Second)
	tr.putBack(times)
	if count, _, _ := histogram(t, m, 0.25); count != 0 {
		t.Fatalf("a failed sync observed %d latencies", count)
	}
	clock.Step(time.Second)
	tr.programmed(tr.checkout(), clock.Now())
	// web's two triggers, at t0 and t0+0.5s, are applied at t0+3s.
	count, sum, under3 := histogram(t, m, 3)
	if count != 2 || sum != 5.5 || under3 != 2 {
		t.Errorf("latencies: count %d, sum %v, %d under 3s; want 2, 5.5, 2", count, sum, under3)
	}
	if _, _, under2 := histogram(t, m, 2); under2 != 0 {
		t.Errorf("%d latencies under 2s, want 0", under2)
	}
	tr.programmed(tr.checkout(), clock.Now())
	if count, _, _ := histogram(t, m, 3); count != 2 {
		t.Errorf("a sync with nothing pending observed latencies: count %d", count)
	}
}

func TestApplyFailureCounters(t *testing.T) {
	refused := errors.New("iptables-restore: line 3 failed")
	for _, mode := range []string{"iptables", "ipvs", "nftables"} {
		m := newMetrics(mode, svcmetrics.Build{})
		r := &reconciler{metrics: m, mode: mode, families: []nodetable.Family{nodetable.IPv4}, applyFailed: func(err error) bool { return errors.Is(err, refused) }}
		r.countApplyFailure(refused, false)
		r.countApplyFailure(errors.New("cannot list the rules"), false)
		r.countApplyFailure(refused, true)
		ipt, nft := gathered(t, m, metricIPTablesRestoreFails), gathered(t, m, metricNFTablesSyncFails)
		partial := gathered(t, m, "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total", "ip_family", "IPv4")
		want := [3]float64{2, 0, 0}
		switch mode {
		case "nftables":
			want = [3]float64{0, 2, 0}
		case "iptables":
			want = [3]float64{2, 0, 1} // the partial sync's failure only
		}
		if got := [3]float64{ipt, nft, partial}; got != want {
			t.Errorf("%s: iptables restore, nftables sync, iptables partial restore failures %v; want %v", mode, got, want)
		}
	}
}

// A slice's latency and queued time go to its own family, as kube-proxy's
// proxier of that family observes them; a Service change queues a sync in
// every family of the node, and a family the node lacks gets nothing.
func TestChangesByFamily(t *testing.T) {
	m := newMetrics("nftables", svcmetrics.Build{})
	start := time.Now().Add(-time.Minute)
	tr := newChangeTracker(m, start, []nodetable.Family{nodetable.IPv6})
	v6 := slice("ns", "web", "web-v6", start.Add(time.Second))
	v6.AddressType = discoveryv1.AddressTypeIPv6
	tr.changed(resEndpointSlices, v6, false)
	tr.changed(resEndpointSlices, slice("ns", "web", "web-v4", start.Add(time.Second)), false)
	if got := gathered(t, m, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", "ip_family", "IPv4"); got != 0 {
		t.Errorf("IPv4 queued on an IPv6 node: %v", got)
	}
	if got := gathered(t, m, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", "ip_family", "IPv6"); got == 0 {
		t.Error("IPv6 slice change: no IPv6 queued time")
	}
	tr.programmed(tr.checkout(), time.Now())
	v4, v6n := gathered(t, m, metricNetworkProgramming, "ip_family", "IPv4"), gathered(t, m, metricNetworkProgramming, "ip_family", "IPv6")
	if v4 != 0 || v6n != 1 {
		t.Errorf("latencies: IPv4 %v, IPv6 %v; want 0 and 1, by the slice's family", v4, v6n)
	}
}
