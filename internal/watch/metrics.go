package watch

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
)

// Metric names. Where kube-proxy v1.37 has a metric for the same thing
// (pkg/proxy/metrics/metrics.go) its name is kept, so that existing
// dashboards and alerts work; kube-proxy labels some of them with
// ip_family, which these lack because one sync covers both families. What
// kube-proxy has no metric for is named svcproxy_*.
const (
	metricSyncDuration    = "kubeproxy_sync_proxy_rules_duration_seconds"
	metricLastSync        = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
	metricLastQueued      = "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"
	metricServiceChanges  = "kubeproxy_sync_proxy_rules_service_changes_total"
	metricEndpointChanges = "kubeproxy_sync_proxy_rules_endpoint_changes_total"
	metricHealthz         = "kubeproxy_proxy_healthz_total"

	metricNetworkProgramming     = "kubeproxy_network_programming_duration_seconds"
	metricServiceChangesPending  = "kubeproxy_sync_proxy_rules_service_changes_pending"
	metricEndpointChangesPending = "kubeproxy_sync_proxy_rules_endpoint_changes_pending"
	metricIPTablesRestoreFails   = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	metricNFTablesSyncFails      = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total"
	metricLivez                  = "kubeproxy_proxy_livez_total"

	metricSyncs       = "svcproxy_syncs_total"
	metricSyncErrors  = "svcproxy_sync_errors_total"
	metricDrift       = "svcproxy_drift_repaired_total"
	metricApplied     = "svcproxy_applied_changes_total"
	metricWatchErrors = "svcproxy_watch_errors_total"
	metricAPIErrors   = "svcproxy_apiserver_request_errors_total"
)

// Values of the trigger label of svcproxy_syncs_total.
const (
	triggerInitial  = "initial"  // the first sync after the caches filled
	triggerEvent    = "event"    // a change in the cluster was pending
	triggerRetry    = "retry"    // the previous sync failed
	triggerPeriodic = "periodic" // --sync-period elapsed with nothing pending
)

// metrics are the loop's Prometheus metrics, in a registry of their own so
// that several loops (tests) can live in one process.
type metrics struct {
	reg *prometheus.Registry

	syncDuration    prometheus.Histogram
	lastSync        prometheus.Gauge
	lastQueued      prometheus.Gauge
	serviceChanges  prometheus.Counter
	endpointChanges prometheus.Counter
	healthz         *prometheus.CounterVec
	livez           *prometheus.CounterVec

	networkProgramming     prometheus.Histogram
	serviceChangesPending  prometheus.Gauge
	endpointChangesPending prometheus.Gauge
	iptablesRestoreFails   prometheus.Counter
	nftablesSyncFails      prometheus.Counter

	syncs       *prometheus.CounterVec
	syncErrors  prometheus.Counter
	drift       prometheus.Counter
	applied     *prometheus.CounterVec
	watchErrors *prometheus.CounterVec
	apiErrors   prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: metricSyncDuration, Help: "SyncProxyRules latency in seconds",
			// kube-proxy's buckets: 1 ms to about 16 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricLastSync, Help: "The last time proxy rules were successfully synced",
		}),
		lastQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricLastQueued, Help: "The last time a sync of proxy rules was queued",
		}),
		serviceChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricServiceChanges, Help: "Cumulative proxy rules Service changes",
		}),
		endpointChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricEndpointChanges, Help: "Cumulative proxy rules Endpoint changes",
		}),
		healthz: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricHealthz, Help: "Cumulative proxy healthz HTTP status",
		}, []string{"code"}),
		livez: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricLivez, Help: "Cumulative proxy livez HTTP status",
		}, []string{"code"}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricSyncs,
			Help: "Syncs run, by what triggered them (initial, event, retry, periodic) and their result (changed, unchanged, error)",
		}, []string{"trigger", "result"}),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricSyncErrors, Help: "Syncs that failed; they are retried with backoff",
		}),
		drift: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricDrift,
			Help: "Syncs that changed the kernel although the cluster state was the one last applied: someone else changed the rules",
		}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricApplied,
			Help: "Changes written to the kernel, by object (chains, rules, elements, virtual_servers, real_servers, addresses) and operation",
		}, []string{"object", "op"}),
		watchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricWatchErrors,
			Help: "Lists or watches that failed with an error the informers report, by resource; they retry with backoff",
		}, []string{"resource"}),
		apiErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricAPIErrors,
			Help: "Requests to the API server that got no answer (refused, reset, timed out): an outage shows here",
		}),
	}
	m.reg.MustRegister(m.syncDuration, m.lastSync, m.lastQueued, m.serviceChanges, m.endpointChanges,
		m.healthz, m.livez, m.syncs, m.syncErrors, m.drift, m.applied, m.watchErrors, m.apiErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.addChangeMetrics()
	return m
}

// addChangeMetrics adds kube-proxy's network programming latency, pending
// changes and apply failures.
func (m *metrics) addChangeMetrics() {
	// kube-proxy's buckets: 0.25 s, 0.5 s, then each second to 59 s, each
	// 5 s to 115 s, each 30 s to 5 min.
	var buckets []float64
	for _, b := range [][]float64{
		prometheus.LinearBuckets(0.25, 0.25, 2), prometheus.LinearBuckets(1, 1, 59),
		prometheus.LinearBuckets(60, 5, 12), prometheus.LinearBuckets(120, 30, 7),
	} {
		buckets = append(buckets, b...)
	}
	m.networkProgramming = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: metricNetworkProgramming, Help: "In Cluster Network Programming Latency in seconds", Buckets: buckets,
	})
	m.serviceChangesPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: metricServiceChangesPending, Help: "Pending proxy rules Service changes",
	})
	m.endpointChangesPending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: metricEndpointChangesPending, Help: "Pending proxy rules Endpoint changes",
	})
	m.iptablesRestoreFails = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricIPTablesRestoreFails, Help: "Cumulative proxy iptables restore failures",
	})
	m.nftablesSyncFails = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricNFTablesSyncFails, Help: "Cumulative proxy nftables sync failures",
	})
	m.reg.MustRegister(m.networkProgramming, m.serviceChangesPending, m.endpointChangesPending,
		m.iptablesRestoreFails, m.nftablesSyncFails)
}

// countHealth counts one answer of the health server, as kube-proxy's
// /healthz and /livez handlers do.
func (m *metrics) countHealth(path string, code int) {
	total := m.healthz
	if path == healthcheck.PathLivez {
		total = m.livez
	}
	total.WithLabelValues(strconv.Itoa(code)).Inc()
}

// countApplied adds a sync's summary to svcproxy_applied_changes_total.
func (m *metrics) countApplied(s diff.Summary) {
	for _, c := range []struct {
		object, op string
		n          int
	}{
		{"chains", "added", s.ChainsAdded},
		{"chains", "changed", s.ChainsChanged},
		{"chains", "deleted", s.ChainsDeleted},
		{"rules", "added", s.RulesAdded},
		{"rules", "deleted", s.RulesRemoved},
		{"sets", "added", s.SetsAdded},
		{"sets", "changed", s.SetsChanged},
		{"sets", "deleted", s.SetsDeleted},
		{"elements", "added", s.ElementsAdded},
		{"elements", "deleted", s.ElementsRemoved},
		{"virtual_servers", "added", s.ServicesAdded},
		{"virtual_servers", "changed", s.ServicesChanged},
		{"virtual_servers", "deleted", s.ServicesDeleted},
		{"real_servers", "added", s.DestinationsAdded},
		{"real_servers", "changed", s.DestinationsChanged},
		{"real_servers", "deleted", s.DestinationsDeleted},
		{"real_servers", "draining", s.DestinationsDraining},
		{"addresses", "added", s.AddressesAdded},
		{"addresses", "deleted", s.AddressesRemoved},
	} {
		if c.n > 0 {
			m.applied.WithLabelValues(c.object, c.op).Add(float64(c.n))
		}
	}
}
