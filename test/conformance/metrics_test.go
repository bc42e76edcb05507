package conformance

import "testing"

// TestMetricSum adds kube-proxy's per-family series and reads the tool's
// unlabelled one, and does not take a longer name for a shorter one.
func TestMetricSum(t *testing.T) {
	kubeProxy := []byte(`# HELP kubeproxy_network_programming_duration_seconds [ALPHA] In Cluster Network Programming Latency in seconds
# TYPE kubeproxy_network_programming_duration_seconds histogram
kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="0.25"} 2
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"} 0.375
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} 2
kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv6"} 1.5
kubeproxy_network_programming_duration_seconds_count{ip_family="IPv6"} 1
`)
	tool := []byte(`kubeproxy_network_programming_duration_seconds_sum 0.125
kubeproxy_network_programming_duration_seconds_count 1
kubeproxy_network_programming_duration_seconds_count_other 7
`)
	for _, c := range []struct {
		body []byte
		name string
		want float64
	}{
		{kubeProxy, latencySum, 1.875},
		{kubeProxy, latencyCount, 3},
		{tool, latencySum, 0.125},
		{tool, latencyCount, 1},
		{tool, syncCount, 0},
	} {
		if got := MetricSum(c.body, c.name); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPercentile takes the nearest rank.
func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for p, want := range map[float64]float64{50: 3, 99: 5, 1: 1, 20: 1, 21: 2} {
		if got := percentile(xs, p); got != want {
			t.Errorf("p%v of %v: %v, want %v", p, xs, got, want)
		}
	}
}
