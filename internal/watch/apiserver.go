package watch

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// newClient returns a client for cfg whose requests pass through an
// apiMonitor. client-go's reflectors retry a refused connection quietly
// (they log it at verbosity 4 and call no watch error handler), so the
// transport is the one place that sees an API server outage.
func newClient(cfg *rest.Config, m *metrics, log *slog.Logger) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &apiMonitor{next: rt, errors: m.apiErrors, log: log}
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}

// apiMonitor counts the requests that get no answer from the API server
// (refused, reset, timed out) and logs when the server stops and starts
// answering, once each way rather than once per retry.
type apiMonitor struct {
	next    http.RoundTripper
	errors  prometheus.Counter
	log     *slog.Logger
	failing atomic.Bool
}

func (a *apiMonitor) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	switch {
	case err != nil && req.Context().Err() == nil:
		a.errors.Inc()
		if !a.failing.Swap(true) {
			a.log.Error("Cannot reach the API server, retrying (the rules stay as last synced)", "err", err)
		}
	case err == nil && a.failing.Swap(false):
		a.log.Info("The API server answers again")
	}
	return resp, err
}
