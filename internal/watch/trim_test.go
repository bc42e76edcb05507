package watch

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/goldencase"
)

// TestTrimKeepsWhatBuildReads builds every golden scenario from its
// objects as they are and as the informers' transform trims them, with
// the warnings: the tables must be the same.
func TestTrimKeepsWhatBuildReads(t *testing.T) {
	for _, gc := range goldencase.Load(t, filepath.Join("..", "..", "testdata", "golden")) {
		snap, err := cluster.Decode(gc.Name, gc.Input)
		if err != nil {
			t.Fatal(err)
		}
		trimmed := &cluster.Snapshot{Nodes: snap.Nodes, ServiceCIDRs: snap.ServiceCIDRs}
		for i := range snap.Services {
			o, _ := trimForProxy(snap.Services[i].DeepCopy())
			trimmed.Services = append(trimmed.Services, *o.(*corev1.Service))
		}
		for i := range snap.EndpointSlices {
			o, _ := trimForProxy(snap.EndpointSlices[i].DeepCopy())
			trimmed.EndpointSlices = append(trimmed.EndpointSlices, *o.(*discoveryv1.EndpointSlice))
		}
		cfg := cluster.Config{NodeName: gc.Cfg.NodeName}
		if cfg.NodeName == "" {
			cfg.NodeName = "node1"
		}
		want, wantWarn, err1 := cluster.Build(snap, cfg)
		got, gotWarn, err2 := cluster.Build(trimmed, cfg)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: Build: %v, trimmed: %v", gc.Name, err1, err2)
		}
		opts := cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("%s: trimming changed the tables (-as is +trimmed):\n%s", gc.Name, d)
		}
		if d := cmp.Diff(wantWarn, gotWarn); d != "" {
			t.Errorf("%s: trimming changed the warnings:\n%s", gc.Name, d)
		}
	}
}

// TestTrimDropsWhatTheProxyDoesNotRead checks what the transform drops
// and keeps.
func TestTrimDropsWhatTheProxyDoesNotRead(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "ns",
		Labels:          map[string]string{discoveryv1.LabelServiceName: "web"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}", corev1.EndpointsLastChangeTriggerTime: "2026-12-01T00:00:00Z"},
		OwnerReferences: []metav1.OwnerReference{{Name: "web"}}, Finalizers: []string{"x"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: *meta.DeepCopy(), Endpoints: []discoveryv1.Endpoint{{
		Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Name: "pod"}, Hostname: new(string)}}}
	trimForProxy(slice)
	want := metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: meta.Labels,
		Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-12-01T00:00:00Z"}}
	if d := cmp.Diff(want, slice.ObjectMeta); d != "" {
		t.Errorf("slice metadata after trimming (-want +got):\n%s", d)
	}
	if ep := slice.Endpoints[0]; ep.TargetRef != nil || ep.Hostname != nil || len(ep.Addresses) != 1 {
		t.Errorf("endpoint after trimming: %+v", ep)
	}
	svc := &corev1.Service{ObjectMeta: *meta.DeepCopy(), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.1"}}
	trimForProxy(svc)
	if svc.Annotations != nil || svc.Spec.Selector != nil || svc.Spec.ClusterIP != "10.96.0.1" || svc.Labels == nil {
		t.Errorf("service after trimming: %+v", svc)
	}
}
