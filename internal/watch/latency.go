package watch

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// changeTracker keeps what kube-proxy's change trackers
// (pkg/proxy/endpointschangetracker.go, servicechangetracker.go) keep for
// the metrics: the changes pending since the last sync began, and for
// each Service the trigger times of its EndpointSlices' changes, from the
// endpoints.kubernetes.io/last-change-trigger-time annotation that the
// EndpointSlice controller sets to the time of the Pod or Service change
// that caused it. A sync takes them when it begins; once it has written
// the kernel, each trigger time gives one network programming latency,
// in the family of its slice, as kube-proxy's proxier of that family
// observes it.
type changeTracker struct {
	m        *metrics
	start    time.Time          // trigger times before it are not ours to measure
	families []nodetable.Family // the node's, for the last queued time

	mu               sync.Mutex
	triggers         triggerTimes
	servicesPending  map[string]bool
	endpointsPending int
}

// triggerTimes are trigger times by the slice's family and the Service's
// namespace/name.
type triggerTimes map[triggerKey][]time.Time

type triggerKey struct {
	family  nodetable.Family
	service string
}

func newChangeTracker(m *metrics, start time.Time, families []nodetable.Family) *changeTracker {
	return &changeTracker{m: m, start: start, families: families, triggers: triggerTimes{}, servicesPending: map[string]bool{}}
}

// changed records an event on a watched object.
func (t *changeTracker) changed(resource string, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m.proxy
	switch resource {
	case resServices:
		p.ServiceChanges.Inc()
		if a, err := meta.Accessor(obj); err == nil {
			t.servicesPending[a.GetNamespace()+"/"+a.GetName()] = true
		}
		p.ServicesPending.Set(float64(len(t.servicesPending)))
		t.queued(t.families...)
	case resEndpointSlices:
		p.EndpointChanges.Inc()
		t.endpointsPending++
		p.EndpointsPending.Set(float64(t.endpointsPending))
		if slice, ok := obj.(*discoveryv1.EndpointSlice); ok {
			t.sliceChanged(slice, deleted)
			t.queued(nodetable.Family(slice.AddressType))
		}
	default:
		t.queued(t.families...)
	}
}

// queued sets the time a sync was last queued in each of families that
// the node has: kube-proxy's proxier of a family queues one for a change
// of a Service, or of one of its family's slices.
func (t *changeTracker) queued(families ...nodetable.Family) {
	for _, f := range families {
		if slices.Contains(t.families, f) {
			t.m.proxy.LastQueued.WithLabelValues(string(f)).SetToCurrentTime()
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
	key := triggerKey{nodetable.Family(slice.AddressType), slice.Namespace + "/" + svc}
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
func (t *changeTracker) checkout() triggerTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.triggers
	t.triggers = triggerTimes{}
	clear(t.servicesPending)
	t.endpointsPending = 0
	t.m.proxy.ServicesPending.Set(0)
	t.m.proxy.EndpointsPending.Set(0)
	return out
}

// putBack returns the trigger times of a failed sync, for the sync that
// will apply them. (kube-proxy drops them, and so never measures a change
// that needed a retry.)
func (t *changeTracker) putBack(times triggerTimes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range times {
		t.triggers[k] = append(v, t.triggers[k]...)
	}
}

// programmed observes, for each trigger time, the latency to now, when
// the sync that took them has written the kernel.
func (t *changeTracker) programmed(times triggerTimes, now time.Time) {
	for k, ts := range times {
		if !slices.Contains(t.families, k.family) {
			continue // no proxier of that family on this node
		}
		for _, at := range ts {
			t.m.proxy.NetworkProgramming.WithLabelValues(string(k.family)).Observe(now.Sub(at).Seconds())
		}
	}
}
