package watch

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// toBeDeletedTaint is the taint the cluster autoscaler puts on a node it is
// about to delete; kube-proxy's /healthz then fails so that load balancers
// drain the node first (pkg/proxy/healthcheck ToBeDeletedTaint).
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// health follows kube-proxy's ProxyHealthServer: the loop is healthy unless
// a change it has seen (or the initial sync) has waited longer than timeout
// (2 × --sync-period) to reach the kernel. An API server outage alone does
// not make it unhealthy: no change is then pending, the rules in the kernel
// are still those the last known state asks for, and the periodic syncs keep
// repairing drift from the informers' cache.
type health struct {
	timeout time.Duration
	now     func() time.Time
	node    func() *corev1.Node // the node's current object, nil if unknown

	mu            sync.Mutex
	lastUpdated   time.Time // last successful sync (or the start)
	pendingSince  time.Time // oldest change no sync has taken on; zero if none
	inFlightSince time.Time // oldest change the running sync applies; zero if none
}

func newHealth(timeout time.Duration, now func() time.Time, node func() *corev1.Node) *health {
	start := now()
	// As kube-proxy: "updated" at start, and the initial sync is pending.
	return &health{timeout: timeout, now: now, node: node, lastUpdated: start, pendingSince: start}
}

// queued records a change that the next sync has to apply.
func (h *health) queued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pendingSince.IsZero() {
		h.pendingSince = h.now()
	}
}

// claim is called as a sync starts: the changes pending so far are that
// sync's to apply. They still count as pending until it ends.
func (h *health) claim() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlightSince, h.pendingSince = h.pendingSince, time.Time{}
}

// done ends the running sync. On success the changes it claimed are
// applied; on failure they are pending again, from when they were first
// seen. Changes queued during the sync stay pending either way.
func (h *health) done(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.lastUpdated = h.now()
	} else {
		h.pendingSince = oldest(h.pendingSince, h.inFlightSince)
	}
	h.inFlightSince = time.Time{}
}

// oldest returns the earlier of two times, zero meaning none.
func oldest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// healthStatus is kube-proxy's /healthz and /livez JSON body, without the
// per-family map (one sync covers both families).
type healthStatus struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	NodeEligible *bool     `json:"nodeEligible,omitempty"`
	Healthy      bool      `json:"healthy"`
}

func (h *health) status() healthStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	since := oldest(h.pendingSince, h.inFlightSince)
	late := !since.IsZero() && now.Sub(since) >= h.timeout
	return healthStatus{LastUpdated: h.lastUpdated, CurrentTime: now, Healthy: !late}
}

// nodeEligible is false while the node is being deleted or is tainted for
// deletion by the autoscaler, and when the node is unknown.
func (h *health) nodeEligible() bool {
	node := h.node()
	if node == nil || node.DeletionTimestamp != nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == toBeDeletedTaint {
			return false
		}
	}
	return true
}

// handler serves /healthz (withNode: the node's eligibility counts too, for
// load balancers' health checks) or /livez, counting answers in total.
func (h *health) handler(withNode bool, total *prometheus.CounterVec) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st := h.status()
		healthy := st.Healthy
		if withNode {
			eligible := h.nodeEligible()
			st.NodeEligible = &eligible
			healthy = healthy && eligible
		}
		code := http.StatusOK
		if healthy {
			// kube-proxy reports a healthy proxier as updated now, as old
			// releases did; the metrics hold the real time of the last sync.
			st.LastUpdated = st.CurrentTime
		} else {
			code = http.StatusServiceUnavailable
		}
		total.WithLabelValues(strconv.Itoa(code)).Inc()
		body, _ := json.Marshal(st)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		w.Write(body)
	})
}
