package watch

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
)

// TestHealthServer checks the loop's health server: the model's /healthz
// and /livez, with the node the informers hold, each answer counted in
// kube-proxy's metric for its path and code. (healthcheck's tests cover
// the answers themselves.)
func TestHealthServer(t *testing.T) {
	addr := freeAddr(t)
	cfg := &Config{HealthzAddr: addr, Health: healthcheck.New(healthcheck.Options{Timeout: time.Minute})}
	node := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: healthcheck.ToBeDeletedTaint}}}}
	m := newMetrics("iptables", svcmetrics.Build{})
	stop, err := startServers(cfg, m, func() *corev1.Node { return node }, slog.New(slog.DiscardHandler))
	defer stop()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": http.StatusServiceUnavailable, "/livez": http.StatusOK} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s with a node tainted for deletion: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if got := gathered(t, m, metricHealthz, "code", "503"); got != 1 {
		t.Errorf("%s{code=503} = %v, want 1", metricHealthz, got)
	}
	if got := gathered(t, m, metricLivez, "code", "200"); got != 1 {
		t.Errorf("%s{code=200} = %v, want 1", metricLivez, got)
	}
}

// TestServersIdentifyThemselves checks that every answer of the health
// and metrics servers carries the tool's Server header, which `plan` and
// `apply` read to tell a running apply --watch from a live kube-proxy
// (apply/otherproxy).
func TestServersIdentifyThemselves(t *testing.T) {
	health, metrics := freeAddr(t), freeAddr(t)
	cfg := &Config{HealthzAddr: health, MetricsAddr: metrics, ProxyMode: "iptables", Health: healthcheck.New(healthcheck.Options{Timeout: time.Minute})}
	stop, err := startServers(cfg, newMetrics("iptables", svcmetrics.Build{}), func() *corev1.Node { return nil }, slog.New(slog.DiscardHandler))
	defer stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{health + "/healthz", health + "/livez", metrics + "/metrics", metrics + "/proxyMode"} {
		resp, err := http.Get("http://" + url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Server"); got != healthcheck.ServerName {
			t.Errorf("%s: Server %q, want %q", url, got, healthcheck.ServerName)
		}
	}
}
