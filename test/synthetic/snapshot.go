package synthetic

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// Snapshot is n ClusterIP Services in 10.96.0.0/16, each with one
// EndpointSlice of ten ready endpoints on ten nodes (node1 to node10), as
// a cluster's API server holds them (labels, annotations, target
// references), for benchmarks of the stages that read snapshots.
func Snapshot(n int) *cluster.Snapshot {
	s := &cluster.Snapshot{}
	for i := range 10 {
		name := fmt.Sprintf("node%d", i+1)
		s.Nodes = append(s.Nodes, corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "zone-a"}}})
	}
	for i := range n {
		s.Services = append(s.Services, snapshotService(i))
		s.EndpointSlices = append(s.EndpointSlices, snapshotSlice(i))
	}
	return s
}

func snapshotNames(i int) (ns, name string) {
	return fmt.Sprintf("ns%d", i%50), fmt.Sprintf("svc%d", i)
}

func snapshotService(i int) corev1.Service {
	ns, name := snapshotNames(i)
	return corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name},
			Annotations: map[string]string{"example.com/owner": "team-" + ns}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255),
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
}

func snapshotSlice(i int) discoveryv1.EndpointSlice {
	ns, name := snapshotNames(i)
	slice := discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		AddressType: discoveryv1.AddressTypeIPv4,
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: name,
			discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}}
	for j := range 10 {
		k := i*10 + j
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+k>>16, k>>8&255, k&255)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node%d", j+1)), Zone: ptr.To("zone-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("%s-pod%d", name, j)}})
	}
	return slice
}

// MoveEndpoint gives Service i's first endpoint another address (in
// 10.127.0.0/16, apart from every other endpoint), round by round: the
// one-endpoint change of the one-shot benchmarks.
func MoveEndpoint(s *cluster.Snapshot, i, round int) {
	s.EndpointSlices[i].Endpoints[0].Addresses = []string{fmt.Sprintf("10.127.%d.%d", round>>8&255, round&255)}
}
