// Package watch keeps a node's rules in sync with the cluster, the way
// kube-proxy's sync loop does: informers on Services, EndpointSlices,
// ServiceCIDRs and this node's Node fill a cache; every change marks a
// sync as due; syncs run at most once per minimum sync period, so a burst
// of changes costs one sync; and a periodic sync re-reads the kernel and
// repairs what someone else changed. It serves kube-proxy's metrics and
// healthz endpoints. It knows no proxy mode: the caller's SyncFunc renders
// a snapshot and reconciles the kernel.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// SyncFunc renders snap for the node and reconciles the kernel with it,
// returning what it did. snap is shared with the informers' cache and
// must not be modified.
type SyncFunc func(ctx context.Context, snap *cluster.Snapshot) (Result, error)

// Result is what a sync did: the changes it wrote, and in each family of
// the node what kube-proxy's metrics report of a sync.
type Result struct {
	Summary  diff.Summary
	Families []svcmetrics.FamilyStats
}

// Config configures Run.
type Config struct {
	// RESTConfig reaches the API server; Run adds its own transport
	// wrapper to a copy, to see when the server cannot be reached.
	RESTConfig *rest.Config
	NodeName   string
	// MinSyncPeriod is the least time between two syncs (kube-proxy's
	// --iptables-min-sync-period); 0 syncs on every change.
	MinSyncPeriod time.Duration
	// SyncPeriod is the most time between two syncs, and the cap of the
	// retry backoff (kube-proxy's --iptables-sync-period).
	SyncPeriod time.Duration
	// Health is the proxy's health, which the loop keeps (a change seen,
	// a sync started, its result) and serves on HealthzAddr; the caller
	// makes it, with kube-proxy's timeout of 2 × SyncPeriod, and may hand
	// it on (to a healthcheck.ServiceServer).
	Health *healthcheck.ProxyHealth
	// MetricsAddr and HealthzAddr are host:port to serve /metrics and
	// /healthz, /livez on; empty serves nothing.
	MetricsAddr, HealthzAddr string
	// Profiling also serves Go's profiles under /debug/pprof/ on the
	// metrics server, as kube-proxy's enableProfiling does.
	Profiling bool
	// ProxyMode is what /proxyMode on the metrics server answers, as
	// kube-proxy's does, and the mode whose kube-proxy metrics are
	// registered.
	ProxyMode string
	// Families are the node's IP families: kube-proxy runs a proxier in
	// each, and labels its metrics with the family.
	Families []nodetable.Family
	// Build is what kubernetes_build_info says of the binary.
	Build svcmetrics.Build
	Sync  SyncFunc
	// IsApplyFailure says whether a sync's error is the kernel refusing
	// the write, for kube-proxy's restore (iptables, ipvs) and sync
	// (nftables) failure counters; nil counts none.
	IsApplyFailure func(error) bool
	// Logger logs, as kube-proxy does, at these levels: Info for starts,
	// stops and repaired drift, Error for failures, Debug (klog's V(2))
	// for syncs that changed something, below Debug (V(4)) for syncs that
	// changed nothing. nil logs nothing.
	Logger *slog.Logger
}

// Validate checks the periods and that the required fields are set.
func (c *Config) Validate() error {
	switch {
	case c.RESTConfig == nil || c.Sync == nil || c.Health == nil:
		return errors.New("watch: no API server, sync function or health")
	case c.NodeName == "":
		return errors.New("no node name given")
	case c.SyncPeriod <= 0:
		return fmt.Errorf("--sync-period %v: must be greater than 0", c.SyncPeriod)
	case c.MinSyncPeriod < 0 || c.MinSyncPeriod > c.SyncPeriod:
		return fmt.Errorf("--min-sync-period %v: must be between 0 and --sync-period (%v)", c.MinSyncPeriod, c.SyncPeriod)
	}
	return nil
}

// Run watches the cluster and syncs until ctx is done, then returns nil.
// It returns an error at once for what waiting cannot fix: invalid
// settings, an address it cannot listen on, and (as a PermanentError)
// rejected credentials, a missing permission or a missing Node. An API
// server that cannot be reached is waited for; once the caches are
// filled, an outage only delays changes: the loop keeps the last known
// state, keeps repairing drift and catches up when the server is back.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := newMetrics(cfg.ProxyMode, cfg.Build)
	client, err := newClient(cfg.RESTConfig, m, log)
	if err != nil {
		return err
	}
	var src atomic.Pointer[source]
	node := func() *corev1.Node {
		if s := src.Load(); s != nil {
			return s.node()
		}
		return nil
	}
	h := cfg.Health
	// Unlike kube-proxy, whose initial sync is not watched, the initial
	// sync counts as a change seen at the start: a node that cannot sync
	// at all (its API server unreachable) fails /healthz after the
	// timeout rather than pass it with no rules.
	h.Queued()
	stop, err := startServers(&cfg, m, node, log)
	defer stop()
	if err != nil {
		return err
	}

	r := &reconciler{sync: cfg.Sync, metrics: m, health: h, log: log, changes: newChangeTracker(m, time.Now(), cfg.Families),
		applyFailed: cfg.IsApplyFailure, mode: cfg.ProxyMode, families: cfg.Families, now: time.Now}
	l := newLoop(cfg.MinSyncPeriod, cfg.SyncPeriod, r.run)
	r.kick = l.trigger // before any event can arrive
	st := newStartup(m, log)
	s, err := newSource(client, cfg.NodeName, sourceEvents{changed: r.changed, watchError: st.watchError})
	if err != nil {
		return err
	}
	r.src = s
	st.src.Store(s)
	informerCtx, cancel := context.WithCancel(ctx)
	defer s.shutdown()
	defer cancel()
	src.Store(s)
	s.startNode(informerCtx)
	if err := st.until(ctx, s.nodeSynced); err != nil || ctx.Err() != nil {
		return err
	}
	s.start(informerCtx)
	if err := st.wait(ctx, s, cfg.NodeName); err != nil || ctx.Err() != nil {
		return err
	}
	log.Info("Caches synced", "minSyncPeriod", cfg.MinSyncPeriod, "syncPeriod", cfg.SyncPeriod)
	l.trigger()
	l.loop(ctx)
	return nil
}

// startServers starts the metrics and health servers that cfg asks for.
// stop shuts them down; it is valid even when err is not nil.
func startServers(cfg *Config, m *metrics, node func() *corev1.Node, log *slog.Logger) (stop func(), err error) {
	var servers []*http.Server
	stop = func() {
		for _, s := range servers {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.Shutdown(ctx)
			cancel()
		}
	}
	metricsMux := http.NewServeMux()
	metricsMux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	metricsMux.HandleFunc("/proxyMode", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, cfg.ProxyMode) })
	metricsMux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	if cfg.Profiling {
		serveProfiles(metricsMux)
	}
	healthMux := cfg.Health.Mux(healthcheck.Serving{Node: node, Answered: m.countHealth})
	for _, s := range []struct {
		name, addr, paths string
		handler           http.Handler
	}{
		{"metrics", cfg.MetricsAddr, "/metrics", healthcheck.Identify(metricsMux)},
		{"healthz", cfg.HealthzAddr, "/healthz and /livez", healthcheck.Identify(healthMux)},
	} {
		if s.addr == "" {
			continue
		}
		l, err := net.Listen("tcp", s.addr)
		if err != nil {
			return stop, fmt.Errorf("%s server: %w", s.name, err)
		}
		srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		go srv.Serve(l)
		log.Info("Serving", "paths", s.paths, "address", "http://"+l.Addr().String())
	}
	return stop, nil
}

// serveProfiles mounts net/http/pprof's handlers, as kube-proxy does on
// its metrics server with enableProfiling.
func serveProfiles(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
