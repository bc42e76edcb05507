package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The label values kube-proxy uses.
const (
	IPv4 = "IPv4" // the ip_family label of IPv4
	IPv6 = "IPv6"
)

// Proxy mode names, as kube-proxy's RegisterMetrics switches on them.
const (
	ModeIPTables = "iptables"
	ModeNFTables = "nftables"
	ModeIPVS     = "ipvs"
)

// syncBuckets are kube-proxy's buckets of every sync duration: 1 ms
// doubling to about 16 s.
var syncBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// programmingBuckets are kube-proxy's buckets of the network programming
// latency. component-base's MergeBuckets starts the list with a 0 bucket,
// so kube-proxy exposes one, and so does the tool: a query that reads
// le="0" finds it in both.
var programmingBuckets = func() []float64 {
	out := []float64{0}
	out = append(out, prometheus.LinearBuckets(0.25, 0.25, 2)...) // 0.25 s, 0.5 s
	out = append(out, prometheus.LinearBuckets(1, 1, 59)...)      // 1 s to 59 s
	out = append(out, prometheus.LinearBuckets(60, 5, 12)...)     // 60 s to 115 s
	return append(out, prometheus.LinearBuckets(120, 30, 7)...)   // 2 min to 5 min
}()

const subsystem = "kubeproxy"

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: name, Help: help}, labels)
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: name, Help: help}, labels)
}

// Proxy holds kube-proxy v1.37's own metrics (pkg/proxy/metrics), each
// under its name, type, labels and buckets. A family kube-proxy registers
// only in some modes is registered by Register only in those; the loop may
// observe any of them.
type Proxy struct {
	SyncDuration        *prometheus.HistogramVec // {ip_family}
	SyncFullDuration    *prometheus.HistogramVec // {ip_family}; iptables, nftables
	SyncPartialDuration *prometheus.HistogramVec // {ip_family}; iptables, nftables
	LastSync            *prometheus.GaugeVec     // {ip_family}
	LastQueued          *prometheus.GaugeVec     // {ip_family}
	NetworkProgramming  *prometheus.HistogramVec // {ip_family}
	EndpointChanges     prometheus.Counter
	EndpointsPending    prometheus.Gauge
	ServiceChanges      prometheus.Counter
	ServicesPending     prometheus.Gauge
	Healthz             *prometheus.CounterVec // {code}
	Livez               *prometheus.CounterVec // {code}
	NoLocalEndpoints    *prometheus.GaugeVec   // {traffic_policy, ip_family}

	IPTablesRestoreFailures        *prometheus.CounterVec // {ip_family}; iptables, ipvs
	IPTablesPartialRestoreFailures *prometheus.CounterVec // {ip_family}; iptables
	IPTablesRules                  *prometheus.GaugeVec   // {table, ip_family}; iptables
	IPTablesRulesLast              *prometheus.GaugeVec   // {table, ip_family}; iptables
	NFTablesSyncFailures           *prometheus.CounterVec // {ip_family}; nftables
	NFTablesCleanupFailures        *prometheus.CounterVec // {ip_family}; nftables
	ConntrackReconcileDuration     *prometheus.HistogramVec
	ConntrackDeleted               *prometheus.CounterVec // {ip_family}
}

// NewProxy makes kube-proxy's metrics, unregistered.
func NewProxy() *Proxy {
	p := &Proxy{
		SyncDuration:        histogram("sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds", syncBuckets, "ip_family"),
		SyncFullDuration:    histogram("sync_full_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for full resyncs", syncBuckets, "ip_family"),
		SyncPartialDuration: histogram("sync_partial_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds for partial resyncs", syncBuckets, "ip_family"),
		LastSync:            gauge("sync_proxy_rules_last_timestamp_seconds", "The last time proxy rules were successfully synced", "ip_family"),
		LastQueued:          gauge("sync_proxy_rules_last_queued_timestamp_seconds", "The last time a sync of proxy rules was queued", "ip_family"),
		NetworkProgramming:  histogram("network_programming_duration_seconds", "In Cluster Network Programming Latency in seconds", programmingBuckets, "ip_family"),
		EndpointChanges: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: subsystem,
			Name: "sync_proxy_rules_endpoint_changes_total", Help: "Cumulative proxy rules Endpoint changes"}),
		EndpointsPending: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: subsystem,
			Name: "sync_proxy_rules_endpoint_changes_pending", Help: "Pending proxy rules Endpoint changes"}),
		ServiceChanges: prometheus.NewCounter(prometheus.CounterOpts{Subsystem: subsystem,
			Name: "sync_proxy_rules_service_changes_total", Help: "Cumulative proxy rules Service changes"}),
		ServicesPending: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: subsystem,
			Name: "sync_proxy_rules_service_changes_pending", Help: "Pending proxy rules Service changes"}),
		Healthz:          counter("proxy_healthz_total", "Cumulative proxy healthz HTTP status", "code"),
		Livez:            counter("proxy_livez_total", "Cumulative proxy livez HTTP status", "code"),
		NoLocalEndpoints: gauge("sync_proxy_rules_no_local_endpoints_total", "Number of services with a Local traffic policy and no endpoints", "traffic_policy", "ip_family"),
	}
	p.newModeMetrics()
	return p
}

// newModeMetrics makes the families that only some modes register.
func (p *Proxy) newModeMetrics() {
	p.IPTablesRestoreFailures = counter("sync_proxy_rules_iptables_restore_failures_total", "Cumulative proxy iptables restore failures", "ip_family")
	p.IPTablesPartialRestoreFailures = counter("sync_proxy_rules_iptables_partial_restore_failures_total", "Cumulative proxy iptables partial restore failures", "ip_family")
	p.IPTablesRules = gauge("sync_proxy_rules_iptables_total", "Total number of iptables rules owned by kube-proxy", "table", "ip_family")
	p.IPTablesRulesLast = gauge("sync_proxy_rules_iptables_last", "Number of iptables rules written by kube-proxy in last sync", "table", "ip_family")
	p.NFTablesSyncFailures = counter("sync_proxy_rules_nftables_sync_failures_total", "Cumulative proxy nftables sync failures", "ip_family")
	p.NFTablesCleanupFailures = counter("sync_proxy_rules_nftables_cleanup_failures_total", "Cumulative proxy nftables cleanup failures", "ip_family")
	p.ConntrackReconcileDuration = histogram("conntrack_reconciler_sync_duration_seconds", "ReconcileConntrackFlowsLatency latency in seconds", syncBuckets, "ip_family")
	p.ConntrackDeleted = counter("conntrack_reconciler_deleted_entries_total", "Cumulative conntrack flows deleted by conntrack reconciler", "ip_family")
}

// Register registers, in reg, what kube-proxy v1.37's RegisterMetrics
// registers for mode: the families of every mode, then the mode's own.
// In iptables mode that includes the two nfacct counters, as kube-proxy
// registers them when the kernel answers nfacct.
func (p *Proxy) Register(reg prometheus.Registerer, mode string) {
	reg.MustRegister(p.SyncDuration, p.LastQueued, p.LastSync, p.EndpointsPending, p.EndpointChanges,
		p.ServicesPending, p.ServiceChanges, p.Healthz, p.Livez, p.NetworkProgramming, p.NoLocalEndpoints)
	switch mode {
	case ModeIPTables:
		for _, c := range nfacctCollectors() {
			reg.MustRegister(c)
		}
		reg.MustRegister(p.SyncFullDuration, p.SyncPartialDuration, p.IPTablesRestoreFailures,
			p.IPTablesPartialRestoreFailures, p.IPTablesRules, p.IPTablesRulesLast,
			p.ConntrackReconcileDuration, p.ConntrackDeleted)
	case ModeIPVS:
		reg.MustRegister(p.IPTablesRestoreFailures, p.ConntrackReconcileDuration, p.ConntrackDeleted)
	case ModeNFTables:
		reg.MustRegister(p.SyncFullDuration, p.SyncPartialDuration, p.NFTablesSyncFailures,
			p.NFTablesCleanupFailures, p.ConntrackReconcileDuration, p.ConntrackDeleted)
	}
}
