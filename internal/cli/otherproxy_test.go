package cli

import (
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/otherproxy"
)

// TestProbeTargets checks where a kube-proxy is looked for: its default
// ports always, apply's bind addresses too, a wildcard on loopback, and
// each URL once.
func TestProbeTargets(t *testing.T) {
	hz := func(u string) otherproxy.Target { return otherproxy.Target{URL: u} }
	mx := func(u string) otherproxy.Target { return otherproxy.Target{URL: u, Metrics: true} }
	for _, c := range []struct {
		name             string
		healthz, metrics []string
		want             []otherproxy.Target
	}{
		{"defaults", nil, nil, []otherproxy.Target{hz("http://127.0.0.1:10256/healthz"), mx("http://127.0.0.1:10249/metrics")}},
		{"apply's defaults add nothing", []string{"0.0.0.0:10256"}, []string{"127.0.0.1:10249"}, []otherproxy.Target{hz("http://127.0.0.1:10256/healthz"), mx("http://127.0.0.1:10249/metrics")}},
		{"other addresses", []string{"[::]:20256", "10.0.0.1:10256"}, []string{":20249", "[fd00::1]:10249"}, []otherproxy.Target{
			hz("http://127.0.0.1:10256/healthz"), hz("http://127.0.0.1:20256/healthz"), hz("http://10.0.0.1:10256/healthz"),
			mx("http://127.0.0.1:10249/metrics"), mx("http://127.0.0.1:20249/metrics"), mx("http://[fd00::1]:10249/metrics")}},
		{"none served, or unparsable", []string{""}, []string{"bogus"}, []otherproxy.Target{hz("http://127.0.0.1:10256/healthz"), mx("http://127.0.0.1:10249/metrics")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := probeTargets(c.healthz, c.metrics); !slices.Equal(got, c.want) {
				t.Errorf("probeTargets(%q, %q) =\n%v\nwant\n%v", c.healthz, c.metrics, got, c.want)
			}
		})
	}
}
