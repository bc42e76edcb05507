package cluster

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// benchSnapshot is n ClusterIP Services, each with one EndpointSlice of ten
// ready endpoints on ten nodes, as a cluster's API server holds them.
func benchSnapshot(n int) *Snapshot {
	s := &Snapshot{}
	for i := range 10 {
		s.Nodes = append(s.Nodes, corev1.Node{TypeMeta: nodeType, ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d", i+1),
			Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node%d", i+1), "topology.kubernetes.io/zone": "zone-a"}}})
	}
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("svc%d", i)
		s.Services = append(s.Services, corev1.Service{TypeMeta: serviceType,
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name},
				Annotations: map[string]string{"example.com/owner": "team-" + ns}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255),
				Selector: map[string]string{"app": name},
				Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
		slice := discoveryv1.EndpointSlice{TypeMeta: endpointSliceType, AddressType: discoveryv1.AddressTypeIPv4,
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
		s.EndpointSlices = append(s.EndpointSlices, slice)
	}
	return s
}

func benchFiles(b *testing.B, n int) (yamlFile, jsonFile []byte) {
	b.Helper()
	var y, j bytes.Buffer
	if err := benchSnapshot(n).WriteYAML(&y); err != nil {
		b.Fatal(err)
	}
	if err := benchSnapshot(n).WriteJSON(&j); err != nil {
		b.Fatal(err)
	}
	return y.Bytes(), j.Bytes()
}

func benchDecode(b *testing.B, name string, data []byte, n int) {
	b.SetBytes(int64(len(data)))
	before := cpuTime(b)
	for b.Loop() {
		s, err := Decode(name, data)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Services) != n {
			b.Fatalf("decoded %d Services, want %d", len(s.Services), n)
		}
	}
	// CPU time, the garbage collector's included, says more than wall time
	// on a shared, loaded machine.
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkDecodeYAML and BenchmarkDecodeJSON decode the same snapshot, as
// `kubectl get -o yaml` and `-o json` print it; the aim is YAML at most 1.5
// times JSON. cpu-ns/op is the one to compare on a shared machine.
func BenchmarkDecodeYAML(b *testing.B) {
	for _, n := range benchSizes() {
		y, _ := benchFiles(b, n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchDecode(b, "snapshot.yaml", y, n) })
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	for _, n := range benchSizes() {
		_, j := benchFiles(b, n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchDecode(b, "snapshot.json", j, n) })
	}
}

// benchSizes is 1k Services, and 10k with SVCPROXY_BENCH_LARGE=1: writing
// the 10k file alone takes minutes, too long for CI's one run of every
// benchmark.
func benchSizes() []int {
	if os.Getenv("SVCPROXY_BENCH_LARGE") != "" {
		return []int{1000, 10000}
	}
	return []int{1000}
}
