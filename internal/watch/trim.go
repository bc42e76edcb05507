package watch

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// trimForProxy is the informers' transform: it drops from each object what
// neither cluster.Build nor the watch loop reads, before the object enters
// the cache, so that the cache holds no more than the proxy needs.
// kube-proxy drops only managedFields; this also drops
//   - annotations, which often hold a whole copy of the object
//     (kubectl.kubernetes.io/last-applied-configuration), but for an
//     EndpointSlice's last-change-trigger-time, the start of the network
//     programming latency;
//   - owner references and finalizers;
//   - a Service's selector and status conditions (the EndpointSlice
//     controller, not the proxy, reads the selector);
//   - an endpoint's targetRef, hostname and deprecated topology.
//
// Labels stay: Build reads the service-name, service-proxy-name and
// headless labels, and the Node's zone. The Node keeps everything but its
// managedFields, since the watch loop compares Nodes as a whole.
func trimForProxy(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		trimMeta(o, "")
		o.Spec.Selector = nil
		o.Status.Conditions = nil
	case *discoveryv1.EndpointSlice:
		trimMeta(o, corev1.EndpointsLastChangeTriggerTime)
		for i := range o.Endpoints {
			ep := &o.Endpoints[i]
			ep.TargetRef, ep.Hostname, ep.DeprecatedTopology = nil, nil, nil
		}
	default:
		if a, err := meta.Accessor(obj); err == nil {
			a.SetManagedFields(nil)
		}
	}
	return obj, nil
}

// trimMeta drops managedFields, owner references, finalizers and every
// annotation but keep (none when keep is "").
func trimMeta(o metav1.Object, keep string) {
	o.SetManagedFields(nil)
	o.SetOwnerReferences(nil)
	o.SetFinalizers(nil)
	var kept map[string]string
	if v, ok := o.GetAnnotations()[keep]; ok && keep != "" {
		kept = map[string]string{keep: v}
	}
	o.SetAnnotations(kept)
}
