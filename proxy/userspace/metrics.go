package userspace

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names. Every per-port series has the labels service_port
// ("namespace/name:port", as in the portal rules' comments), protocol
// ("tcp", "udp") and family ("IPv4", "IPv6").
const (
	metricConnections = "svcproxy_userspace_connections_total"
	metricActive      = "svcproxy_userspace_active_connections"
	metricBytes       = "svcproxy_userspace_bytes_total"
	metricErrors      = "svcproxy_userspace_errors_total"
	metricEndpoints   = "svcproxy_userspace_endpoints"
	metricListening   = "svcproxy_userspace_listening"
	metricSyncs       = "svcproxy_userspace_syncs_total"
	metricLastSync    = "svcproxy_userspace_last_sync_timestamp_seconds"
)

// errReason is the reason label of metricErrors.
type errReason int

const (
	errNoEndpoints errReason = iota // a connection came while there were none
	errDial                         // one dial to an endpoint failed
	errConnect                      // every dial attempt failed: the client was reset
	errCopy                         // a read or write failed mid-connection
	errAccept                       // a listener failed to open, accept or read
	numReasons
)

var reasonNames = [numReasons]string{"no_endpoints", "dial", "connect", "copy", "accept"}

var portLabels = []string{"service_port", "protocol", "family"}

// Metrics are the proxy's Prometheus metrics, in a registry of their own
// with the Go runtime and process collectors, as kube-proxy serves them.
type Metrics struct {
	reg         *prometheus.Registry
	connections *prometheus.CounterVec
	active      *prometheus.GaugeVec
	bytes       *prometheus.CounterVec
	errors      *prometheus.CounterVec
	endpoints   *prometheus.GaugeVec
	listening   *prometheus.GaugeVec
	syncs       *prometheus.CounterVec
	lastSync    prometheus.Gauge

	mu    sync.Mutex
	ports map[portKey]*portStats
}

// NewMetrics returns the metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricConnections,
			Help: "Connections accepted (TCP) and flows started (UDP), per Service port."}, portLabels),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricActive,
			Help: "Connections (TCP) and flows (UDP) open now, per Service port."}, portLabels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricBytes,
			Help: "Bytes proxied, per Service port: direction in is client to endpoint, out is endpoint to client."},
			append(portLabels, "direction")),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricErrors,
			Help: "Failures per Service port: no_endpoints, dial (one endpoint), connect (every attempt), copy, accept."},
			append(portLabels, "reason")),
		endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricEndpoints,
			Help: "Endpoints the Service port balances over."}, portLabels),
		listening: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricListening,
			Help: "1 while the Service port's proxy socket is open; it is closed while there are no endpoints."}, portLabels),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricSyncs,
			Help: "Syncs of the portal rules and proxy sockets, by result (success, error)."}, []string{"result"}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricLastSync,
			Help: "When the last successful sync finished, in seconds since the epoch."}),
		ports: map[portKey]*portStats{},
	}
	m.reg.MustRegister(m.connections, m.active, m.bytes, m.errors, m.endpoints, m.listening, m.syncs, m.lastSync,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"success", "error"} {
		m.syncs.WithLabelValues(r)
	}
	return m
}

// Registry is where the metrics are registered, for callers that serve
// more metrics beside them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ServeHTTP serves the metrics, for a /metrics endpoint.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// RecordSync counts one sync, successful when err is nil.
func (m *Metrics) RecordSync(err error) {
	if err != nil {
		m.syncs.WithLabelValues("error").Inc()
		return
	}
	m.syncs.WithLabelValues("success").Inc()
	m.lastSync.SetToCurrentTime()
}

// portStats are one Service port's series, looked up once so that the
// data path updates them without a map lookup.
type portStats struct {
	connections, bytesIn, bytesOut prometheus.Counter
	active, endpoints, listening   prometheus.Gauge
	errors                         [numReasons]prometheus.Counter
}

func (s *portStats) fail(r errReason) { s.errors[r].Inc() }

func (k portKey) labels() []string {
	return []string{k.name.String(), k.name.Protocol.Lower(), string(k.family)}
}

// port returns the series of a Service port, creating them at zero.
func (m *Metrics) port(k portKey) *portStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.ports[k]; ok {
		return s
	}
	l := k.labels()
	s := &portStats{
		connections: m.connections.WithLabelValues(l...),
		active:      m.active.WithLabelValues(l...),
		bytesIn:     m.bytes.WithLabelValues(append(l, "in")...),
		bytesOut:    m.bytes.WithLabelValues(append(l, "out")...),
		endpoints:   m.endpoints.WithLabelValues(l...),
		listening:   m.listening.WithLabelValues(l...),
	}
	for r := range numReasons {
		s.errors[r] = m.errors.WithLabelValues(append(l, reasonNames[r])...)
	}
	m.ports[k] = s
	return s
}

// drop removes a Service port's series when the port is gone; goroutines
// still finishing its connections update detached series.
func (m *Metrics) drop(k portKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ports, k)
	l := k.labels()
	for _, v := range []*prometheus.MetricVec{m.connections.MetricVec, m.active.MetricVec, m.endpoints.MetricVec, m.listening.MetricVec} {
		v.DeleteLabelValues(l...)
	}
	for _, d := range []string{"in", "out"} {
		m.bytes.DeleteLabelValues(append(l, d)...)
	}
	for _, r := range reasonNames {
		m.errors.DeleteLabelValues(append(l, r)...)
	}
}
