package cli

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// testWatchLatency changes an EndpointSlice as the EndpointSlice controller
// does, stamping the time of the change that caused it, and expects one
// more network programming latency in the histogram once it is synced,
// no longer than the time the test waited.
func testWatchLatency(t *testing.T, client kubernetes.Interface, tool *bgProc) {
	const count = "kubeproxy_network_programming_duration_seconds_count"
	const sumName = "kubeproxy_network_programming_duration_seconds_sum"
	before, sumBefore := max(tool.metric(count), 0), max(tool.metric(sumName), 0)
	ctx := t.Context()
	if err := createService(ctx, client, "latency", "10.96.2.50", "10.244.0.11"); err != nil {
		t.Fatal(err)
	}
	slice, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "latency-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	slice.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: start.UTC().Format(time.RFC3339Nano)}
	slice.Endpoints = readyEndpoints([]string{"10.244.0.11", "10.244.1.12"})
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tool.waitFor(t, "a network programming latency", e2eSyncPeriod+5*time.Second, func() bool { return tool.metric(count) >= before+1 })
	waited := time.Since(start).Seconds()
	_, body := tool.get("127.0.0.1:10249", "/metrics")
	latency := parseMetric(body, sumName) - sumBefore
	if got := tool.metric(count); got != before+1 {
		t.Errorf("%s: %v, want %v: one annotated change", count, got, before+1)
	}
	if latency <= 0 || latency > waited {
		t.Errorf("latency %v s, after waiting %.2f s for it", latency, waited)
	}
	if !strings.Contains(body, `kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="0.25"}`) {
		t.Errorf("/metrics lacks kube-proxy's first latency bucket, le=0.25, of the slice's family")
	}
}
