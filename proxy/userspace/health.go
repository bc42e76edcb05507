package userspace

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Health is the state behind /healthz, after kube-proxy's proxier health
// server: healthy once the first sync has succeeded, and unhealthy when a
// change has waited longer than the timeout for a successful sync, so that
// a node whose rules have stopped following the cluster is taken out of
// load-balancer rotation.
type Health struct {
	timeout time.Duration
	now     func() time.Time

	mu          sync.Mutex
	lastUpdated time.Time // last successful sync
	queued      time.Time // oldest change not synced yet; zero if none
	stopping    bool
}

// NewHealth returns the state of a proxy that has not synced yet; a change
// pending for longer than timeout makes it unhealthy.
func NewHealth(timeout time.Duration) *Health {
	return &Health{timeout: timeout, now: time.Now}
}

// Queued records that a change waits to be synced.
func (h *Health) Queued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queued.IsZero() {
		h.queued = h.now()
	}
}

// Updated records a successful sync of everything queued so far.
func (h *Health) Updated() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastUpdated = h.now()
	h.queued = time.Time{}
}

// Stopping makes the proxy unhealthy for the rest of its life.
func (h *Health) Stopping() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = true
}

// Healthy reports the state, and the time of the last successful sync.
func (h *Health) Healthy() (bool, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopping, h.lastUpdated.IsZero():
		return false, h.lastUpdated
	case !h.queued.IsZero() && h.now().Sub(h.queued) > h.timeout:
		return false, h.lastUpdated
	}
	return true, h.lastUpdated
}

// ServeHTTP answers 200 when healthy and 503 otherwise, with kube-proxy's
// JSON body: {"lastUpdated": ..., "currentTime": ...}.
func (h *Health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	ok, last := h.Healthy()
	body := struct {
		LastUpdated time.Time `json:"lastUpdated"`
		CurrentTime time.Time `json:"currentTime"`
	}{last, h.now()}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}
