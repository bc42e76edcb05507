package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// The resources the source watches, as the metrics and logs name them.
const (
	resServices       = "services"
	resEndpointSlices = "endpointslices"
	resNodes          = "nodes"
	resServiceCIDRs   = "servicecidrs"
)

// Label keys of kube-proxy's informer filters (cmd/kube-proxy/app/server.go).
const (
	labelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	labelHeadless         = corev1.IsHeadlessService
)

// source keeps informer caches of what kube-proxy watches, filtered as
// kube-proxy's informers filter them, and turns them into the
// cluster.Snapshot that cluster.FromAPI would read. The filters only drop
// objects that cluster.Build ignores anyway (Services of another proxy,
// headless Services and their EndpointSlices), so Build gives the same
// tables from either snapshot; they save memory and needless syncs.
type source struct {
	nodeName  string
	factories []informers.SharedInformerFactory
	services  corelisters.ServiceLister
	slices    discoverylisters.EndpointSliceLister
	nodes     corelisters.NodeLister
	cidrs     networkinglisters.ServiceCIDRLister
	synced    []cache.InformerSynced

	nodeFactory informers.SharedInformerFactory
	nodeSynced  cache.InformerSynced

	// The ServiceCIDR informer runs under a context of its own, so that
	// it can be stopped alone when the API server lacks ServiceCIDRs or
	// forbids them (dropCIDRs); cidrsOff then says so, and warnings why.
	cidrFactory informers.SharedInformerFactory
	cidrCancel  context.CancelFunc
	cidrsOff    atomic.Bool
	mu          sync.Mutex
	warnings    []cluster.Warning
}

// sourceEvents are the source's callbacks. changed is called for every
// change that can alter the tables, with the new object (the old one, or a
// tombstone, when deleted); watchError for every failed list or watch,
// which the informer retries by itself.
type sourceEvents struct {
	changed    func(resource string, obj any, deleted bool)
	watchError func(resource string, err error)
}

// newSource sets up the informers (started by start).
func newSource(client kubernetes.Interface, nodeName string, ev sourceEvents) (*source, error) {
	s := &source{nodeName: nodeName}
	factory := func(tweak func(*metav1.ListOptions)) informers.SharedInformerFactory {
		opts := []informers.SharedInformerOption{informers.WithTransform(trimForProxy)}
		if tweak != nil {
			opts = append(opts, informers.WithTweakListOptions(tweak))
		}
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
		s.factories = append(s.factories, f)
		return f
	}
	svc := factory(func(o *metav1.ListOptions) {
		o.LabelSelector = "!" + labelServiceProxyName
		o.FieldSelector = fields.OneTermNotEqualSelector("spec.clusterIP", corev1.ClusterIPNone).String()
	}).Core().V1().Services()
	eps := factory(func(o *metav1.ListOptions) { o.LabelSelector = "!" + labelHeadless }).Discovery().V1().EndpointSlices()
	node := factory(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	}).Core().V1().Nodes()
	s.services, s.slices, s.nodes = svc.Lister(), eps.Lister(), node.Lister()
	s.nodeFactory, s.nodeSynced = s.factories[len(s.factories)-1], node.Informer().HasSynced

	type watched struct {
		resource string
		inf      cache.SharedIndexInformer
		relevant func(old, new any) bool
	}
	all := []watched{
		{resServices, svc.Informer(), newVersion},
		{resEndpointSlices, eps.Informer(), newVersion},
		{resNodes, node.Informer(), nodeChanged},
	}
	for _, w := range all {
		if err := register(w.resource, w.inf, w.relevant, ev); err != nil {
			return nil, err
		}
		s.synced = append(s.synced, w.inf.HasSynced)
	}
	s.cidrFactory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimForProxy))
	cidr := s.cidrFactory.Networking().V1().ServiceCIDRs()
	s.cidrs = cidr.Lister()
	if err := register(resServiceCIDRs, cidr.Informer(), newVersion, ev); err != nil {
		return nil, err
	}
	s.synced = append(s.synced, func() bool { return s.cidrsOff.Load() || cidr.Informer().HasSynced() })
	return s, nil
}

// dropCIDRs stops watching ServiceCIDRs, which the API server lacks or
// forbids (err), and goes on without them, with a warning, as FromAPI
// does. It returns the warning the first time, and nil after.
func (s *source) dropCIDRs(err error) *cluster.Warning {
	if s.cidrsOff.Swap(true) {
		return nil
	}
	w := cluster.Warning{Object: resServiceCIDRs, Message: fmt.Sprintf("cannot list and watch (%v): continuing without ServiceCIDRs", err)}
	s.mu.Lock()
	s.warnings = append(s.warnings, w)
	s.mu.Unlock()
	if s.cidrCancel != nil {
		s.cidrCancel()
	}
	return &w
}

// register installs the event and watch-error handlers of one informer.
func register(resource string, inf cache.SharedIndexInformer, relevant func(old, new any) bool, ev sourceEvents) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { ev.changed(resource, obj, false) },
		UpdateFunc: func(old, new any) {
			if relevant(old, new) {
				ev.changed(resource, new, false)
			}
		},
		DeleteFunc: func(obj any) { ev.changed(resource, obj, true) },
	})
	if err != nil {
		return fmt.Errorf("%s informer: %w", resource, err)
	}
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if !routineWatchEnd(err) {
			ev.watchError(resource, err)
		}
	})
}

// routineWatchEnd recognises what client-go's default handler logs only at
// verbosity 4: a watch the server expired (the reflector lists again) or
// closed.
func routineWatchEnd(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// newVersion ignores updates that do not change the object (resyncs).
func newVersion(old, new any) bool {
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(new)
	return err1 != nil || err2 != nil || o.GetResourceVersion() != n.GetResourceVersion()
}

// nodeChanged ignores the Node's heartbeats: only what cluster.Build reads
// from a Node matters (its labels for the zone, its pod CIDRs and
// addresses).
func nodeChanged(old, new any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := new.(*corev1.Node)
	return !ok1 || !ok2 || nodeKey(o) != nodeKey(n)
}

// nodeKey is the part of a Node that cluster.Build reads, as a string.
func nodeKey(n *corev1.Node) string {
	return fmt.Sprintf("%s %v %q %q %v", n.Name, n.Labels, n.Spec.PodCIDR, n.Spec.PodCIDRs, n.Status.Addresses)
}

// startNode starts the Node's informer alone. Its request opens the one
// HTTP/2 connection that the other informers then share, as kube-proxy's
// share the connection its first request opened: started together, each
// dials and handshakes a connection of its own before ALPN tells the
// transport that one is enough (three TLS handshakes more per node
// start, about 9 kB received, in BenchmarkWatchLatency).
func (s *source) startNode(ctx context.Context) {
	s.nodeFactory.StartWithContext(ctx)
}

// start starts the informers (the Node's again is a no-op); they run
// until ctx is done (the ServiceCIDR one until dropCIDRs, if sooner).
func (s *source) start(ctx context.Context) {
	for _, f := range s.factories {
		f.StartWithContext(ctx)
	}
	var cidrCtx context.Context
	cidrCtx, s.cidrCancel = context.WithCancel(ctx)
	s.cidrFactory.StartWithContext(cidrCtx)
}

// hasSynced reports whether every cache holds a full list (or, for
// ServiceCIDRs, was dropped).
func (s *source) hasSynced() bool {
	for _, synced := range s.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// shutdown waits for the informers' goroutines, once ctx passed to start
// is done.
func (s *source) shutdown() {
	for _, f := range append(s.factories, s.cidrFactory) {
		f.Shutdown()
	}
}

// node returns the cached Node, or nil.
func (s *source) node() *corev1.Node {
	n, err := s.nodes.Get(s.nodeName)
	if err != nil {
		return nil
	}
	return n
}

// The kinds of a snapshot's objects: objects from informers lack their
// type metadata, and snapshots carry it.
var (
	nodeKind          = corev1.SchemeGroupVersion.WithKind("Node")
	serviceKind       = corev1.SchemeGroupVersion.WithKind("Service")
	endpointSliceKind = discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")
	serviceCIDRKind   = networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR")
)

// snapshot returns the caches' content as a snapshot normalised as
// FromAPI's are (type metadata set, no managedFields, lists sorted by
// namespace/name), and a fingerprint of the state it holds. The objects
// are shallow copies that share their contents with the cache: the
// snapshot is read-only.
func (s *source) snapshot() (*cluster.Snapshot, uint64, error) {
	node := s.node()
	if node == nil {
		err := apierrors.NewNotFound(schema.GroupResource{Resource: resNodes}, s.nodeName)
		return nil, 0, &nodeMissingError{name: s.nodeName, err: err}
	}
	s.mu.Lock()
	snap := &cluster.Snapshot{Warnings: slices.Clone(s.warnings)}
	s.mu.Unlock()
	snap.Nodes = copyObjects([]*corev1.Node{node}, nodeKind)
	svcs, _ := s.services.List(labels.Everything())
	snap.Services = copyObjects(svcs, serviceKind)
	eps, _ := s.slices.List(labels.Everything())
	snap.EndpointSlices = copyObjects(eps, endpointSliceKind)
	if !s.cidrsOff.Load() {
		cidrs, _ := s.cidrs.List(labels.Everything())
		snap.ServiceCIDRs = copyObjects(cidrs, serviceCIDRKind)
	}
	return snap, fingerprint(snap), nil
}

// copyObjects copies the cached objects into a list of values sorted by
// namespace/name, with their kind set. The pointers are sorted, not the
// values: a Service is most of a kilobyte, and sorting 10k of them moved
// each one some fourteen times.
func copyObjects[T any, P interface {
	*T
	metav1.Object
	runtime.Object
}](in []P, kind schema.GroupVersionKind) []T {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b P) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	out := make([]T, len(in))
	for i, p := range in {
		out[i] = *p
		P(&out[i]).GetObjectKind().SetGroupVersionKind(kind)
	}
	return out
}

// fingerprint identifies the cluster state a snapshot holds: two
// snapshots with the same fingerprint render the same rules. It hashes
// each object's UID and resourceVersion, and the parts of the Node that
// Build reads.
func fingerprint(s *cluster.Snapshot) uint64 {
	h := fnv.New64a()
	add := func(m *metav1.ObjectMeta) {
		h.Write([]byte(m.UID))
		h.Write([]byte{'/'})
		h.Write([]byte(m.ResourceVersion))
		h.Write([]byte{'\n'})
	}
	for i := range s.Services {
		add(&s.Services[i].ObjectMeta)
	}
	h.Write([]byte("--\n"))
	for i := range s.EndpointSlices {
		add(&s.EndpointSlices[i].ObjectMeta)
	}
	h.Write([]byte("--\n"))
	for i := range s.ServiceCIDRs {
		add(&s.ServiceCIDRs[i].ObjectMeta)
	}
	for i := range s.Nodes {
		h.Write([]byte(nodeKey(&s.Nodes[i])))
	}
	return h.Sum64()
}

// nodeMissingError is this node's Node missing from the API. It wraps the
// API's NotFound error, so apierrors.IsNotFound is true for it.
type nodeMissingError struct {
	name string
	err  error
}

func (e *nodeMissingError) Error() string {
	return fmt.Sprintf("node %q not found (check --node-name)", e.name)
}

func (e *nodeMissingError) Unwrap() error { return e.err }

// IsNodeNotFound reports whether err says that this node's Node object
// does not exist.
func IsNodeNotFound(err error) bool {
	var nm *nodeMissingError
	return errors.As(err, &nm)
}
