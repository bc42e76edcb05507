package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// The size of the --all-nodes benchmarks: go test ./internal/cli -run '^$'
// -bench 'PlanOneNode|PlanAllNodes' -bench-nodes 1000 -bench-services 1000,
// in iptables mode unless -bench-mode says another.
var (
	benchNodes    = flag.Int("bench-nodes", 100, "nodes in BenchmarkPlanAllNodes' snapshots")
	benchServices = flag.Int("bench-services", 100, "Services in BenchmarkPlanAllNodes' snapshots")
	benchMode     = flag.String("bench-mode", "iptables", "the --mode of BenchmarkPlanAllNodes and BenchmarkPlanOneNode")
)

// fleetSnapshot is a cluster of nodes Nodes in three zones and services
// Services with five endpoints each on nodes spread over the cluster:
// every fourth Service a NodePort with externalTrafficPolicy Local, so
// that which endpoints are local matters. change is the pull request:
// one Service gains an endpoint, one is added.
func fleetSnapshot(nodes, services int, change bool) *cluster.Snapshot {
	s := &cluster.Snapshot{}
	for i := range nodes {
		name := fmt.Sprintf("node%04d", i)
		s.Nodes = append(s.Nodes, corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
				Labels: map[string]string{"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", i>>8, i&255)}}}})
	}
	n := services
	if change {
		n++
	}
	for i := range n {
		s.Services = append(s.Services, fleetService(i))
		s.EndpointSlices = append(s.EndpointSlices, fleetSlice(i, nodes, change && i == 0))
	}
	return s
}

func fleetService(i int) corev1.Service {
	name := fmt.Sprintf("svc%04d", i)
	svc := corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8, i&255),
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if i%4 == 0 {
		svc.Spec.Type, svc.Spec.ExternalTrafficPolicy = corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal
		svc.Spec.Ports[0].NodePort = int32(30000 + i%2700)
	}
	return svc
}

func fleetSlice(i, nodes int, extra bool) discoveryv1.EndpointSlice {
	name := fmt.Sprintf("svc%04d", i)
	slice := discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		AddressType: discoveryv1.AddressTypeIPv4,
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-x", UID: types.UID("uid-slice-" + name), ResourceVersion: "1",
			Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](8080)}}}
	count := 5
	if extra {
		count++
	}
	for j := range count {
		k := i*5 + j
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 128+k>>16, k>>8&255, k&255)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(fmt.Sprintf("node%04d", (k*7919)%nodes))})
	}
	return slice
}

// writeFleet writes the old and new snapshots of the benchmarks' cluster.
func writeFleet(tb testing.TB, nodes, services int) (newPath, oldPath string) {
	return writeFleetWith(tb, nodes, services, nil)
}

// writeFleetWith is writeFleet with vary applied to each snapshot (change
// says which) before it is written.
func writeFleetWith(tb testing.TB, nodes, services int, vary func(s *cluster.Snapshot, change bool)) (newPath, oldPath string) {
	dir := tb.TempDir()
	for _, f := range []struct {
		path   string
		change bool
	}{{filepath.Join(dir, "new.yaml"), true}, {filepath.Join(dir, "old.yaml"), false}} {
		file, err := os.Create(f.path)
		if err != nil {
			tb.Fatal(err)
		}
		snap := fleetSnapshot(nodes, services, f.change)
		if vary != nil {
			vary(snap, f.change)
		}
		if err := snap.WriteYAML(file); err != nil {
			tb.Fatal(err)
		}
		if err := file.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return filepath.Join(dir, "new.yaml"), filepath.Join(dir, "old.yaml")
}

// benchPlan runs plan --against as a user does, files decoded included.
func benchPlan(b *testing.B, extra ...string) {
	newPath, oldPath := writeFleet(b, *benchNodes, *benchServices)
	args := append([]string{"plan", "-f", newPath, "--against", oldPath, "--family=ipv4", "--mode=" + *benchMode}, extra...)
	b.ResetTimer()
	start := processCPU()
	for b.Loop() {
		if _, stderr, code := run(b, "", args...); code != ExitChanges {
			b.Fatalf("exit %d: %s", code, stderr)
		}
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPlanOneNode is one node's plan --against: the unit
// BenchmarkPlanAllNodes is measured in (docs/CI-REVIEW.md).
func BenchmarkPlanOneNode(b *testing.B) { benchPlan(b, "--node-name=node0000") }

// BenchmarkPlanAllNodes is plan --against --all-nodes on the same files.
func BenchmarkPlanAllNodes(b *testing.B) { benchPlan(b, "--all-nodes") }
