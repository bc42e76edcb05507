package metrics

import (
	"context"
	"math"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Buckets of component-base's client-go adapter
// (k8s.io/component-base/metrics/prometheus/restclient).
var (
	latencyBuckets  = []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	sizeBuckets     = []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
	rotationBuckets = []float64{600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}
)

// restClient is client-go's request metrics under component-base's names,
// labels and buckets, the ones kube-proxy exports: what every node's proxy
// asks of the API server, per verb and status, is read from them.
type restClient struct {
	requestLatency, rateLimiterLatency *prometheus.HistogramVec // {verb, host}
	requestSize, responseSize          *prometheus.HistogramVec // {verb, host}
	requests                           *prometheus.CounterVec   // {code, method, host}
	retries                            *prometheus.CounterVec   // {code, verb, host}
	certRotation                       prometheus.Histogram
	certExpiry                         atomic.Pointer[time.Time]
	execCalls                          *prometheus.CounterVec // {code, call_status}
	cacheEntries                       prometheus.Gauge
	createCalls                        *prometheus.CounterVec // {result}
	caReloads                          *prometheus.CounterVec // {result, reason}
	certGCCalls                        prometheus.Counter
	cacheGCCalls                       *prometheus.CounterVec // {result}
	collectors                         []prometheus.Collector
}

func newRESTClient() *restClient {
	h := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	r := &restClient{
		requestLatency:     h("rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.", latencyBuckets, "verb", "host"),
		rateLimiterLatency: h("rest_client_rate_limiter_duration_seconds", "Client side rate limiter latency in seconds. Broken down by verb, and host.", latencyBuckets, "verb", "host"),
		requestSize:        h("rest_client_request_size_bytes", "Request size in bytes. Broken down by verb and host.", sizeBuckets, "verb", "host"),
		responseSize:       h("rest_client_response_size_bytes", "Response size in bytes. Broken down by verb and host.", sizeBuckets, "verb", "host"),
		requests:           c("rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.", "code", "method", "host"),
		retries:            c("rest_client_request_retries_total", "Number of request retries, partitioned by status code, verb, and host.", "code", "verb", "host"),
		certRotation: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rest_client_exec_plugin_certificate_rotation_age",
			Help: "Histogram of the number of seconds the last auth exec plugin client certificate lived before being rotated.", Buckets: rotationBuckets}),
		execCalls: c("rest_client_exec_plugin_call_total", "Number of calls to an exec plugin, partitioned by the type of event encountered and an optional exit code.", "code", "call_status"),
		cacheEntries: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rest_client_transport_cache_entries",
			Help: "Number of transport entries in the internal cache."}),
		createCalls: c("rest_client_transport_create_calls_total", "Number of calls to get a new transport, partitioned by the result of the operation.", "result"),
		caReloads:   c("rest_client_transport_ca_reload_total", "Number of times a CA reload is attempted, partitioned by the result and reason for the reload attempt", "result", "reason"),
		certGCCalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "rest_client_transport_cert_rotation_gc_calls_total",
			Help: "Number of times a cert rotation goroutine cancel func is called via GC cleanup of the associated transport"}),
		cacheGCCalls: c("rest_client_transport_cache_gc_calls_total", "Number of times a GC cleanup attempts to delete a transport cache entry, partitioned by the result: deleted, skipped", "result"),
	}
	ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rest_client_exec_plugin_ttl_seconds",
		Help: "Gauge of the shortest TTL (time-to-live) of the client certificate(s) managed by the auth exec plugin, +Inf when there are none."},
		func() float64 {
			if e := r.certExpiry.Load(); e != nil {
				return time.Until(*e).Seconds()
			}
			return math.Inf(1)
		})
	r.collectors = []prometheus.Collector{r.requestLatency, r.requestSize, r.responseSize, r.rateLimiterLatency,
		r.requests, r.retries, ttl, r.certRotation, r.execCalls, r.cacheEntries, r.createCalls, r.caReloads,
		r.certGCCalls, r.cacheGCCalls}
	return r
}

// RESTClient returns the collectors of client-go's request metrics,
// installing them into client-go the first time: client-go takes one set
// per process, so every registry shares them. Call it before making a
// client, so that the transport it creates is counted. The families are
// those component-base registers; it leaves out the DNS resolution and
// exec plugin policy ones, which it does not register either.
var RESTClient = sync.OnceValue(func() []prometheus.Collector {
	r := newRESTClient()
	clientmetrics.Register(clientmetrics.RegisterOpts{
		ClientCertExpiry:             expiry{r},
		ClientCertRotationAge:        duration{r.certRotation},
		RequestLatency:               latency{r.requestLatency},
		RateLimiterLatency:           latency{r.rateLimiterLatency},
		RequestSize:                  size{r.requestSize},
		ResponseSize:                 size{r.responseSize},
		RequestResult:                result{r.requests},
		RequestRetry:                 result{r.retries},
		ExecPluginCalls:              calls{r.execCalls},
		TransportCacheEntries:        gaugeInt{r.cacheEntries},
		TransportCreateCalls:         labelled{r.createCalls},
		TransportCAReloads:           labelled2{r.caReloads},
		TransportCertRotationGCCalls: plain{r.certGCCalls},
		TransportCacheGCCalls:        labelled{r.cacheGCCalls},
	})
	return r.collectors
})

// The adapters from client-go's metric interfaces.
type (
	expiry    struct{ r *restClient }
	duration  struct{ h prometheus.Histogram }
	latency   struct{ h *prometheus.HistogramVec }
	size      struct{ h *prometheus.HistogramVec }
	result    struct{ c *prometheus.CounterVec }
	calls     struct{ c *prometheus.CounterVec }
	gaugeInt  struct{ g prometheus.Gauge }
	labelled  struct{ c *prometheus.CounterVec }
	labelled2 struct{ c *prometheus.CounterVec }
	plain     struct{ c prometheus.Counter }
)

func (e expiry) Set(t *time.Time)             { e.r.certExpiry.Store(t) }
func (d duration) Observe(took time.Duration) { d.h.Observe(took.Seconds()) }
func (l latency) Observe(_ context.Context, verb string, u url.URL, took time.Duration) {
	l.h.WithLabelValues(verb, u.Host).Observe(took.Seconds())
}
func (s size) Observe(_ context.Context, verb, host string, n float64) {
	s.h.WithLabelValues(verb, host).Observe(n)
}
func (r result) Increment(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}
func (r result) IncrementRetry(_ context.Context, code, method, host string) {
	r.c.WithLabelValues(code, method, host).Inc()
}
func (c calls) Increment(code int, status string) {
	c.c.WithLabelValues(strconv.Itoa(code), status).Inc()
}
func (g gaugeInt) Observe(v int)          { g.g.Set(float64(v)) }
func (l labelled) Increment(v string)     { l.c.WithLabelValues(v).Inc() }
func (l labelled2) Increment(v, w string) { l.c.WithLabelValues(v, w).Inc() }
func (p plain) Increment()                { p.c.Inc() }
