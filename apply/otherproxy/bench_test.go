package otherproxy

import (
	"testing"
	"time"
)

// BenchmarkProbeNoKubeProxy is the cost of the detection on a node where
// nothing listens on kube-proxy's ports (this machine's, as it is).
func BenchmarkProbeNoKubeProxy(b *testing.B) {
	cfg := Config{Timeout: 250 * time.Millisecond, SelfServer: "kubectl-svcproxy", Targets: []Target{
		{URL: "http://127.0.0.1:1/healthz"}, {URL: "http://127.0.0.1:2/metrics", Metrics: true},
	}}
	for b.Loop() {
		if _, err := Probe(b.Context(), cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcesses is the scan of /proc alone.
func BenchmarkProcesses(b *testing.B) {
	for b.Loop() {
		if _, err := Processes("/proc"); err != nil {
			b.Fatal(err)
		}
	}
}
