package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// The apiserver creates and keeps default/kubernetes itself. Here it has no
// endpoints (the test cluster advertises 127.0.0.1), so both kube-proxy and
// the tool would install a "has no endpoints" reject for it in every
// scenario. The runner gives it this label instead: kube-proxy's informers
// ignore every Service carrying it (whatever its value), and so does the
// tool, so the comparison sees only the scenario's own Services.
const (
	serviceProxyNameLabel = "service.kubernetes.io/service-proxy-name"
	notOurProxy           = "conformance-none"
	// defaultServiceCIDR is the ServiceCIDR the apiserver creates from
	// --service-cluster-ip-range; the runner leaves it in place.
	defaultServiceCIDR = "kubernetes"
)

// Objects writes snapshot objects into an API server and clears them again,
// as the missing controller manager would leave them: EndpointSlices are
// written as they are, Service and Node status through the status
// subresource.
type Objects struct {
	Client kubernetes.Interface
}

// MarkDefaultService labels default/kubernetes so that neither proxy
// programs it.
func (o Objects) MarkDefaultService(ctx context.Context) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, serviceProxyNameLabel, notOurProxy)
	_, err := o.Client.CoreV1().Services(metav1.NamespaceDefault).Patch(ctx, "kubernetes",
		types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Load creates every object of snap: namespaces first, then ServiceCIDRs,
// Nodes, Services and EndpointSlices.
func (o Objects) Load(ctx context.Context, snap *cluster.Snapshot) error {
	if err := o.namespaces(ctx, snap); err != nil {
		return err
	}
	for _, sc := range snap.ServiceCIDRs {
		sc.ObjectMeta = cleanMeta(sc.ObjectMeta)
		if _, err := o.Client.NetworkingV1().ServiceCIDRs().Create(ctx, &sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ServiceCIDR %s: %w", sc.Name, err)
		}
	}
	for _, n := range snap.Nodes {
		if err := o.createNode(ctx, n); err != nil {
			return err
		}
	}
	for _, svc := range snap.Services {
		if err := o.createService(ctx, svc); err != nil {
			return err
		}
	}
	for _, es := range snap.EndpointSlices {
		es.ObjectMeta = cleanMeta(es.ObjectMeta)
		if _, err := o.Client.DiscoveryV1().EndpointSlices(es.Namespace).Create(ctx, &es, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create EndpointSlice %s/%s: %w", es.Namespace, es.Name, err)
		}
	}
	return nil
}

// namespaces creates the namespaces the objects live in. Namespaces are
// never deleted: without the controller manager they would stay
// Terminating.
func (o Objects) namespaces(ctx context.Context, snap *cluster.Snapshot) error {
	seen := map[string]bool{}
	var names []string
	for _, s := range snap.Services {
		names = append(names, s.Namespace)
	}
	for _, s := range snap.EndpointSlices {
		names = append(names, s.Namespace)
	}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := o.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", n, err)
		}
	}
	return nil
}

func (o Objects) createNode(ctx context.Context, n corev1.Node) error {
	n.ObjectMeta = cleanMeta(n.ObjectMeta)
	created, err := o.Client.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Node %s: %w", n.Name, err)
	}
	created.Status = n.Status
	if _, err := o.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Node %s status: %w", n.Name, err)
	}
	return nil
}

func (o Objects) createService(ctx context.Context, svc corev1.Service) error {
	svc.ObjectMeta = cleanMeta(svc.ObjectMeta)
	status := svc.Status
	svc.Status = corev1.ServiceStatus{}
	created, err := o.Client.CoreV1().Services(svc.Namespace).Create(ctx, &svc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if len(status.LoadBalancer.Ingress) == 0 {
		return nil
	}
	created.Status = status
	if _, err := o.Client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("Service %s/%s status: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// cleanMeta keeps what a manifest would carry.
func cleanMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace,
		Labels: m.Labels, Annotations: m.Annotations,
	}
}

// Clear deletes every Service but default/kubernetes, every EndpointSlice,
// every Node and every ServiceCIDR but the apiserver's own, and waits until
// they are gone.
func (o Objects) Clear(ctx context.Context) error {
	all := metav1.NamespaceAll
	slices, err := o.Client.DiscoveryV1().EndpointSlices(all).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, es := range slices.Items {
		if err := ignoreNotFound(o.Client.DiscoveryV1().EndpointSlices(es.Namespace).Delete(ctx, es.Name, metav1.DeleteOptions{})); err != nil {
			return err
		}
	}
	svcs, err := o.Client.CoreV1().Services(all).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, s := range svcs.Items {
		if s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes" {
			continue
		}
		if err := ignoreNotFound(o.Client.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})); err != nil {
			return err
		}
	}
	if err := o.Client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	if err := o.clearServiceCIDRs(ctx); err != nil {
		return err
	}
	return o.waitEmpty(ctx)
}

// clearServiceCIDRs deletes the ServiceCIDRs a scenario added. Their
// finalizer belongs to a controller of kube-controller-manager, which does
// not run here, so the runner removes it itself.
func (o Objects) clearServiceCIDRs(ctx context.Context) error {
	api := o.Client.NetworkingV1().ServiceCIDRs()
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, sc := range list.Items {
		if sc.Name == defaultServiceCIDR {
			continue
		}
		if err := ignoreNotFound(api.Delete(ctx, sc.Name, metav1.DeleteOptions{})); err != nil {
			return err
		}
		if len(sc.Finalizers) > 0 {
			_, err := api.Patch(ctx, sc.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err := ignoreNotFound(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitEmpty waits until lists (served from the watch cache, as kube-proxy's
// informers and the tool read) show only what Clear keeps.
func (o Objects) waitEmpty(ctx context.Context) error {
	return poll(ctx, 30*time.Second, func() error {
		n, err := o.count(ctx)
		if err != nil {
			return err
		}
		if n != (Counts{services: 1, serviceCIDRs: 1}) {
			return fmt.Errorf("objects left after clearing: %+v", n)
		}
		return nil
	})
}

// Counts is how many objects of each kind a list shows.
type Counts struct{ services, slices, nodes, serviceCIDRs int }

// Expect returns the Counts a list shows once snap is loaded (plus
// default/kubernetes and the default ServiceCIDR).
func Expect(snap *cluster.Snapshot) Counts {
	return Counts{
		services:     len(snap.Services) + 1,
		slices:       len(snap.EndpointSlices),
		nodes:        len(snap.Nodes),
		serviceCIDRs: len(snap.ServiceCIDRs) + 1,
	}
}

// count lists every kind from the watch cache (resourceVersion 0).
func (o Objects) count(ctx context.Context) (Counts, error) {
	var c Counts
	opts := metav1.ListOptions{ResourceVersion: "0"}
	svcs, err := o.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return c, err
	}
	slices, err := o.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return c, err
	}
	nodes, err := o.Client.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return c, err
	}
	cidrs, err := o.Client.NetworkingV1().ServiceCIDRs().List(ctx, opts)
	if err != nil {
		return c, err
	}
	return Counts{len(svcs.Items), len(slices.Items), len(nodes.Items), len(cidrs.Items)}, nil
}

// WaitLoaded waits until the watch cache shows want.
func (o Objects) WaitLoaded(ctx context.Context, want Counts) error {
	return poll(ctx, 60*time.Second, func() error {
		n, err := o.count(ctx)
		if err != nil {
			return err
		}
		if n != want {
			return fmt.Errorf("the API server lists %+v, want %+v", n, want)
		}
		return nil
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// poll calls cond every 100ms until it returns nil or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		last := cond()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
