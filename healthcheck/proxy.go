package healthcheck

import (
	"sync"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Flavor is the kube-proxy release whose health endpoints a ProxyHealth
// answers as. The state is the same in both; what is served differs.
type Flavor int

const (
	// V137 is kube-proxy v1.37's ProxyHealthServer: /healthz and /livez,
	// a JSON body with lastUpdated, currentTime, healthy and the status of
	// each family, and on /healthz nodeEligible: /healthz also fails while
	// the node is being deleted or carries the cluster autoscaler's
	// ToBeDeletedByClusterAutoscaler taint. Each answer is counted
	// (kubeproxy_proxy_healthz_total, kubeproxy_proxy_livez_total).
	V137 Flavor = iota
	// V125 is kube-proxy v1.25's proxierHealthServer, which userspace mode
	// follows: /healthz only, the body {"lastUpdated": "…","currentTime": "…"}
	// with the times in Go's default text (time.Time's String), no node
	// check and no metric.
	V125
)

// Options configure a ProxyHealth.
type Options struct {
	Flavor Flavor
	// Timeout is how long a change may wait for a successful sync before
	// the proxy is unhealthy: kube-proxy's 2 × its sync period.
	Timeout time.Duration
	// Families are the families the proxy syncs, for V137's per-family
	// status (one sync covers them all, so they share one state).
	Families []nodetable.Family
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// ProxyHealth is the proxy's health: healthy unless a change it has seen
// has waited Timeout or longer for a sync that succeeds. A command calls
// Queued when it sees a change, Claim as a sync starts and Done as it ends.
//
// kube-proxy has one mark, the oldest change not yet synced, which its
// Updated clears, changes that arrived during the sync included. Here a
// sync claims the changes pending as it starts; a change that arrives
// during it stays pending, and the claimed ones are pending again, from
// when they were first seen, if the sync fails. Where no change arrives
// during a sync the two agree.
type ProxyHealth struct {
	flavor   Flavor
	timeout  time.Duration
	families []nodetable.Family
	now      func() time.Time

	mu            sync.Mutex
	lastUpdated   time.Time // the last successful sync, or the start
	pendingSince  time.Time // the oldest change no sync has claimed; zero if none
	inFlightSince time.Time // the oldest change the running sync claimed; zero if none
}

// New returns the health of a proxy that starts now. As kube-proxy's sync
// loop does when it starts, it counts as updated now, with nothing pending:
// healthy until a change waits too long.
func New(o Options) *ProxyHealth {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &ProxyHealth{flavor: o.Flavor, timeout: o.Timeout, families: o.Families, now: now, lastUpdated: now()}
}

// Flavor is the release the health answers as.
func (h *ProxyHealth) Flavor() Flavor { return h.flavor }

// Queued records a change that a sync has to apply.
func (h *ProxyHealth) Queued() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pendingSince.IsZero() {
		h.pendingSince = h.now()
	}
}

// Claim is called as a sync starts: the changes pending so far are that
// sync's to apply. They still count as pending until it ends.
func (h *ProxyHealth) Claim() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlightSince, h.pendingSince = oldest(h.inFlightSince, h.pendingSince), time.Time{}
}

// Done ends the running sync. On success the changes it claimed are
// applied; on failure they are pending again, from when they were first
// seen. Changes queued during the sync stay pending either way.
func (h *ProxyHealth) Done(ok bool) {
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

// state is the health at one moment.
type state struct {
	lastUpdated time.Time
	now         time.Time
	healthy     bool
}

func (h *ProxyHealth) state() state {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	since := oldest(h.pendingSince, h.inFlightSince)
	// As kube-proxy: late once the oldest change has waited the timeout.
	late := !since.IsZero() && now.Sub(since) >= h.timeout
	return state{lastUpdated: h.lastUpdated, now: now, healthy: !late}
}

// Healthy reports whether the proxy is healthy: what the Service health
// checks call serviceProxyHealthy, which the node's eligibility does not
// change.
func (h *ProxyHealth) Healthy() bool { return h.state().healthy }
