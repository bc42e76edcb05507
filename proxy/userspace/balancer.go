package userspace

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// ErrNoEndpoints is returned when a Service port has no endpoint to pick.
var ErrNoEndpoints = errors.New("no endpoints")

// balancer picks endpoints for one Service port as v1.25's LoadBalancerRR
// did for one ServicePortName: round robin over the endpoints in a random
// order, and with ClientIP affinity the endpoint a client IP last used, for
// as long as that client keeps using it within the timeout.
type balancer struct {
	now func() time.Time

	mu        sync.Mutex
	endpoints []netip.AddrPort // shuffled
	index     int              // the next endpoint to hand out
	ttl       time.Duration    // 0: no session affinity
	sticky    map[netip.Addr]*affinity
}

// affinity is one client IP's sticky endpoint (v1.25's affinityState).
type affinity struct {
	endpoint netip.AddrPort
	lastUsed time.Time
}

func newBalancer(now func() time.Time) *balancer {
	return &balancer{now: now, sticky: map[netip.Addr]*affinity{}}
}

// update sets the endpoints and the affinity timeout (seconds; 0 is no
// affinity). As in v1.25's OnEndpointsUpdate, an unchanged set of endpoints
// keeps the round-robin position and every client's affinity; a changed
// set is shuffled anew, restarts the round robin and forgets the clients
// of removed endpoints. It reports whether the set changed, and which
// endpoints were removed.
func (b *balancer) update(endpoints []netip.AddrPort, affinitySeconds int32) (changed bool, removed []netip.AddrPort) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ttl := time.Duration(affinitySeconds) * time.Second
	if ttl != b.ttl {
		// v1.25 restarted the Service port on an affinity change; its
		// sticky clients were forgotten with it.
		b.ttl = ttl
		clear(b.sticky)
	}
	if sameSet(b.endpoints, endpoints) {
		return false, nil
	}
	for _, ep := range b.endpoints {
		if !slices.Contains(endpoints, ep) {
			removed = append(removed, ep)
		}
	}
	for ip, a := range b.sticky {
		if slices.Contains(removed, a.endpoint) {
			delete(b.sticky, ip)
		}
	}
	b.endpoints = slices.Clone(endpoints)
	// Shuffled as v1.25 did, so that nodes do not all send their first
	// connection to the same endpoint.
	rand.Shuffle(len(b.endpoints), func(i, j int) {
		b.endpoints[i], b.endpoints[j] = b.endpoints[j], b.endpoints[i]
	})
	b.index = 0
	return true, removed
}

// sameSet reports whether a and b hold the same endpoints in any order.
func sameSet(a, b []netip.AddrPort) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ep := range b {
		if !slices.Contains(a, ep) {
			return false
		}
	}
	return true
}

// next returns the endpoint for a new connection from client. With
// affinity, a client seen within the timeout gets its endpoint again,
// unless resetAffinity is set: then, as after a failed dial in v1.25's
// TryConnectEndpoints, it gets the next endpoint in turn and sticks to
// that one instead.
func (b *balancer) next(client netip.Addr, resetAffinity bool) (netip.AddrPort, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.endpoints) == 0 {
		return netip.AddrPort{}, ErrNoEndpoints
	}
	now := b.now()
	if b.ttl > 0 && !resetAffinity {
		if a, ok := b.sticky[client]; ok && now.Sub(a.lastUsed) < b.ttl {
			a.lastUsed = now
			return a.endpoint, nil
		}
	}
	ep := b.endpoints[b.index]
	b.index = (b.index + 1) % len(b.endpoints)
	if b.ttl > 0 {
		b.sticky[client] = &affinity{endpoint: ep, lastUsed: now}
	}
	return ep, nil
}

// sweep forgets the clients whose affinity has expired, as v1.25's
// CleanupStaleStickySessions did on every sync.
func (b *balancer) sweep() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for ip, a := range b.sticky {
		if now.Sub(a.lastUsed) >= b.ttl {
			delete(b.sticky, ip)
		}
	}
}
