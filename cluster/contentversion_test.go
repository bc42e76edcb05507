package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Objects of the same content get the same version whatever their UID and
// resourceVersion said; a change the resourceVersion did not record
// (a file edited by hand) gets another.
func TestVersionByContent(t *testing.T) {
	svc := func(ip, rv string) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: rv},
			Spec: corev1.ServiceSpec{ClusterIP: ip}}
	}
	slice := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-x", ResourceVersion: "7"}}
	a := &Snapshot{Services: []corev1.Service{svc("10.96.0.1", "5")}, EndpointSlices: []discoveryv1.EndpointSlice{slice}}
	b := &Snapshot{Services: []corev1.Service{svc("10.96.0.1", "9")}, EndpointSlices: []discoveryv1.EndpointSlice{slice}}
	c := &Snapshot{Services: []corev1.Service{svc("10.96.0.2", "5")}, EndpointSlices: []discoveryv1.EndpointSlice{slice}}
	for _, s := range []*Snapshot{a, b, c} {
		if err := s.VersionByContent(); err != nil {
			t.Fatal(err)
		}
	}
	va, vb, vc := versionOf(&a.Services[0].ObjectMeta), versionOf(&b.Services[0].ObjectMeta), versionOf(&c.Services[0].ObjectMeta)
	if !va.known() || va != vb {
		t.Errorf("same content: %v and %v", va, vb)
	}
	if va == vc {
		t.Errorf("another cluster IP, one resourceVersion: both %v", va)
	}
	if v := versionOf(&a.EndpointSlices[0].ObjectMeta); !v.known() || v != versionOf(&c.EndpointSlices[0].ObjectMeta) {
		t.Errorf("slices: %v", v)
	}
}
