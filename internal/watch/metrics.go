package watch

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	svcmetrics "github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
)

// Metric names. kube-proxy's own families are package metrics'
// (kube-proxy's names, labels and buckets, registered per mode as
// kube-proxy registers them); these are the ones the tests read, and the
// tool's own, named svcproxy_*, for what kube-proxy has no metric for.
const (
	metricNetworkProgramming     = "kubeproxy_network_programming_duration_seconds"
	metricServiceChangesPending  = "kubeproxy_sync_proxy_rules_service_changes_pending"
	metricEndpointChangesPending = "kubeproxy_sync_proxy_rules_endpoint_changes_pending"
	metricIPTablesRestoreFails   = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total"
	metricNFTablesSyncFails      = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total"
	metricHealthz                = "kubeproxy_proxy_healthz_total"
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
	reg   *prometheus.Registry
	proxy *svcmetrics.Proxy

	syncs       *prometheus.CounterVec
	syncErrors  prometheus.Counter
	drift       prometheus.Counter
	applied     *prometheus.CounterVec
	watchErrors *prometheus.CounterVec
	apiErrors   prometheus.Counter
}

// newMetrics registers what kube-proxy v1.37 registers in mode (its own
// families, client-go's request metrics, the build info, the Go runtime
// and the process), and the tool's own.
func newMetrics(mode string, build svcmetrics.Build) *metrics {
	m := &metrics{
		reg:   prometheus.NewRegistry(),
		proxy: svcmetrics.NewProxy(),
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
	m.register(m.reg, mode, build)
	return m
}

// register registers every family of the loop on reg.
func (m *metrics) register(reg prometheus.Registerer, mode string, build svcmetrics.Build) {
	m.proxy.Register(reg, mode)
	reg.MustRegister(m.syncs, m.syncErrors, m.drift, m.applied, m.watchErrors, m.apiErrors, svcmetrics.BuildInfo(build))
	reg.MustRegister(svcmetrics.RESTClient()...)
	reg.MustRegister(svcmetrics.Runtime()...)
}

// countHealth counts one answer of the health server, as kube-proxy's
// /healthz and /livez handlers do.
func (m *metrics) countHealth(path string, code int) {
	total := m.proxy.Healthz
	if path == healthcheck.PathLivez {
		total = m.proxy.Livez
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
