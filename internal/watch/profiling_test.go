package watch

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
)

// TestProfilesOnlyWhenAsked checks the metrics server: /debug/pprof/ is
// served with Profiling, as kube-proxy's enableProfiling does, and not
// without it.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		addr := freeAddr(t)
		cfg := &Config{MetricsAddr: addr, Profiling: profiling, Health: healthcheck.New(healthcheck.Options{Timeout: time.Minute})}
		stop, err := startServers(cfg, newMetrics("iptables", svcmetrics.Build{}), func() *corev1.Node { return nil }, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/debug/pprof/")
		if err != nil {
			stop()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		stop()
		served := resp.StatusCode == http.StatusOK && strings.Contains(string(body), "goroutine")
		if served != profiling {
			t.Errorf("Profiling %v: /debug/pprof/ answered %d, served profiles: %v", profiling, resp.StatusCode, served)
		}
	}
}

// freeAddr is a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
