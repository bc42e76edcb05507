package cluster

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Snapshot is the part of a cluster's state that kube-proxy reads. It is kept
// faithful to the API objects: kube-proxy's informer filters (service-proxy-name,
// headless) are applied by Build, not here. The only changes made on load are
// the ones kube-proxy makes too: managedFields are dropped. Each list is sorted
// by namespace/name and every object has its apiVersion and kind set.
type Snapshot struct {
	Nodes          []corev1.Node
	Services       []corev1.Service
	EndpointSlices []discoveryv1.EndpointSlice
	ServiceCIDRs   []networkingv1.ServiceCIDR

	// Warnings describe what was skipped or tolerated while loading (other
	// kinds, unknown fields, duplicates, a ServiceCIDR API the server lacks).
	// They are not part of the snapshot's content: WriteYAML drops them.
	Warnings []Warning
}

// Type metadata of the four kinds a snapshot holds.
var (
	nodeType          = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	serviceType       = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	endpointSliceType = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
	serviceCIDRType   = metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "ServiceCIDR"}
)

// LoadFile reads and decodes the snapshot at path; "-" reads stdin.
func LoadFile(path string, stdin io.Reader) (*Snapshot, error) {
	return LoadFileCounting(path, stdin, nil)
}

// LoadFileCounting is LoadFile that adds each object to examined as it is
// examined (on every CPU), for a progress line while a large file
// decodes; nil counts nothing. Where a file is decoded a second time, the
// careful way after the fast one failed, the count starts again.
func LoadFileCounting(path string, stdin io.Reader, examined *atomic.Int64) (*Snapshot, error) {
	r := reading{examined: examined}
	if path == "-" {
		if stdin == nil {
			return nil, fmt.Errorf("read <stdin>: no standard input")
		}
		data, err := readStream(stdin)
		if err != nil {
			return nil, fmt.Errorf("read <stdin>: %w", err)
		}
		return decode("<stdin>", data, r)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, unmap, err := mapFile(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if unmap == nil {
		return decode(path, data, r)
	}
	defer unmap()
	return decodeMapped(path, data, r)
}

// Normalize sets type metadata, drops managedFields and sorts every list, in
// place. Decode and fromapi.Snapshot both end with it, so snapshots compare equal
// however they were obtained.
func (s *Snapshot) Normalize() {
	for i := range s.Nodes {
		s.Nodes[i].TypeMeta = nodeType
		s.Nodes[i].ManagedFields = nil
	}
	for i := range s.Services {
		s.Services[i].TypeMeta = serviceType
		s.Services[i].ManagedFields = nil
	}
	for i := range s.EndpointSlices {
		s.EndpointSlices[i].TypeMeta = endpointSliceType
		s.EndpointSlices[i].ManagedFields = nil
	}
	for i := range s.ServiceCIDRs {
		s.ServiceCIDRs[i].TypeMeta = serviceCIDRType
		s.ServiceCIDRs[i].ManagedFields = nil
	}
	slices.SortStableFunc(s.Nodes, func(a, b corev1.Node) int { return compareMeta(&a.ObjectMeta, &b.ObjectMeta) })
	slices.SortStableFunc(s.Services, func(a, b corev1.Service) int { return compareMeta(&a.ObjectMeta, &b.ObjectMeta) })
	slices.SortStableFunc(s.EndpointSlices, func(a, b discoveryv1.EndpointSlice) int {
		return compareMeta(&a.ObjectMeta, &b.ObjectMeta)
	})
	slices.SortStableFunc(s.ServiceCIDRs, func(a, b networkingv1.ServiceCIDR) int {
		return compareMeta(&a.ObjectMeta, &b.ObjectMeta)
	})
}

func compareMeta(a, b *metav1.ObjectMeta) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// objectName is "namespace/name", or "name" for cluster-scoped objects.
func objectName(m *metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}
