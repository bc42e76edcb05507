package watch

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// changeTracker keeps what kube-proxy's change trackers
// (pkg/proxy/endpointschangetracker.go, servicechangetracker.go) keep for
// the metrics: the changes pending since the last sync began, and for
// each Service the trigger times of its EndpointSlices' changes, from the
// endpoints.kubernetes.io/last-change-trigger-time annotation that the
// EndpointSlice controller sets to the time of the Pod or Service change
// that caused it. A sync takes them when it begins; once it has written
// the kernel, each trigger time gives one network programming latency.
type changeTracker struct {
	m     *metrics
	start time.Time // trigger times before it are not ours to measure

	mu               sync.Mutex
	triggers         map[string][]time.Time // by the Service's namespace/name
	servicesPending  map[string]bool
	endpointsPending int
}

func newChangeTracker(m *metrics, start time.Time) *changeTracker {
	return &changeTracker{m: m, start: start, triggers: map[string][]time.Time{}, servicesPending: map[string]bool{}}
}

// changed records an event on a watched object.
func (t *changeTracker) changed(resource string, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch resource {
	case resServices:
		t.m.serviceChanges.Inc()
		if a, err := meta.Accessor(obj); err == nil {
			t.servicesPending[a.GetNamespace()+"/"+a.GetName()] = true
		}
		t.m.serviceChangesPending.Set(float64(len(t.servicesPending)))
	case resEndpointSlices:
		t.m.endpointChanges.Inc()
		t.endpointsPending++
		t.m.endpointChangesPending.Set(float64(t.endpointsPending))
		if slice, ok := obj.(*discoveryv1.EndpointSlice); ok {
			t.sliceChanged(slice, deleted)
		}
	}
}

// sliceChanged keeps the slice's trigger time. As in kube-proxy, a
// deletion drops the Service's pending times: a deleted slice's annotation
// is the time of its last update, not of the deletion.
func (t *changeTracker) sliceChanged(slice *discoveryv1.EndpointSlice, deleted bool) {
	svc := slice.Labels[discoveryv1.LabelServiceName]
	if svc == "" {
		return
	}
	key := slice.Namespace + "/" + svc
	if deleted {
		delete(t.triggers, key)
		return
	}
	v, ok := slice.Annotations[corev1.EndpointsLastChangeTriggerTime]
	if !ok {
		return
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err == nil && at.After(t.start) {
		t.triggers[key] = append(t.triggers[key], at)
	}
}

// checkout takes the pending trigger times as a sync begins, and sets
// the pending gauges to zero.
func (t *changeTracker) checkout() map[string][]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.triggers
	t.triggers = map[string][]time.Time{}
	clear(t.servicesPending)
	t.endpointsPending = 0
	t.m.serviceChangesPending.Set(0)
	t.m.endpointChangesPending.Set(0)
	return out
}

// putBack returns the trigger times of a failed sync, for the sync that
// will apply them. (kube-proxy drops them, and so never measures a change
// that needed a retry.)
func (t *changeTracker) putBack(times map[string][]time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range times {
		t.triggers[k] = append(v, t.triggers[k]...)
	}
}

// programmed observes, for each trigger time, the latency to now, when
// the sync that took them has written the kernel.
func (t *changeTracker) programmed(times map[string][]time.Time, now time.Time) {
	for _, ts := range times {
		for _, at := range ts {
			t.m.networkProgramming.Observe(now.Sub(at).Seconds())
		}
	}
}
