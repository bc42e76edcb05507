package conformance

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

const userspaceDump = `*filter
:INPUT ACCEPT [0:0]
:KUBE-NODEPORT-NON-LOCAL - [0:0]
:KUBE-FIREWALL - [0:0]
-A INPUT -m comment --comment "Ensure that non-local NodePort traffic can flow" -j KUBE-NODEPORT-NON-LOCAL
-A INPUT -j KUBE-FIREWALL
-A KUBE-NODEPORT-NON-LOCAL -p tcp -m comment --comment ns1/svc:http -m tcp --dport 24321 -m state --state NEW -j ACCEPT
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-PORTALS-CONTAINER - [0:0]
:KUBE-PORTALS-HOST - [0:0]
-A OUTPUT -m comment --comment "handle ClusterIPs; NOTE: this must be before the NodePort rules" -j KUBE-PORTALS-HOST
-A KUBE-PORTALS-HOST -d 10.96.0.2/32 -p tcp -m comment --comment ns1/b:dns -m tcp --dport 53 -j DNAT --to-destination 192.168.77.10:21000
-A KUBE-PORTALS-HOST -d 10.96.0.1/32 -p tcp -m comment --comment ns1/svc:http -m tcp --dport 80 -j DNAT --to-destination 192.168.77.10:24321
-A KUBE-PORTALS-CONTAINER -d 10.96.0.1/32 -p tcp -m comment --comment ns1/svc:http -m tcp --dport 80 -j REDIRECT --to-ports 24321
COMMIT
`

func TestCanonicalUserspace(t *testing.T) {
	got, err := CanonicalUserspace([]byte(userspaceDump))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"IPv4 filter :KUBE-NODEPORT-NON-LOCAL -",
		`IPv4 filter -A INPUT -m comment --comment "Ensure that non-local NodePort traffic can flow" -j KUBE-NODEPORT-NON-LOCAL`,
		"IPv4 nat :KUBE-PORTALS-CONTAINER -",
		"IPv4 nat :KUBE-PORTALS-HOST -",
		`IPv4 nat -A OUTPUT -m comment --comment "handle ClusterIPs; NOTE: this must be before the NodePort rules" -j KUBE-PORTALS-HOST`,
		"IPv4 filter -A KUBE-NODEPORT-NON-LOCAL -p tcp -m comment --comment ns1/svc:http -m tcp --dport <proxy-port ns1/svc:http> -m state --state NEW -j ACCEPT",
		"IPv4 nat -A KUBE-PORTALS-CONTAINER -d 10.96.0.1/32 -p tcp -m comment --comment ns1/svc:http -m tcp --dport 80 -j REDIRECT --to-ports <proxy-port ns1/svc:http>",
		"IPv4 nat -A KUBE-PORTALS-HOST -d 10.96.0.1/32 -p tcp -m comment --comment ns1/svc:http -m tcp --dport 80 -j DNAT --to-destination 192.168.77.10:<proxy-port ns1/svc:http>",
		"IPv4 nat -A KUBE-PORTALS-HOST -d 10.96.0.2/32 -p tcp -m comment --comment ns1/b:dns -m tcp --dport 53 -j DNAT --to-destination 192.168.77.10:<proxy-port ns1/b:dns>",
	}
	if d := LineDiff(got, want); len(d) > 0 {
		t.Errorf("got:\n%s\ndiff:\n%s", got, strings.Join(d, "\n"))
	}
}

func TestCanonicalUserspaceConflict(t *testing.T) {
	dump := strings.Replace(userspaceDump, "192.168.77.10:21000", "192.168.77.10:24321", 1)
	got, err := CanonicalUserspace([]byte(dump))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "proxy-port conflict: 24321 used by") {
		t.Errorf("a port shared by two service ports is not reported:\n%s", got)
	}
}

func TestEndpointsFromSlices(t *testing.T) {
	name, port, no := "http", int32(8080), false
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	metricsName, metrics := "metrics", int32(9090)
	snap := &cluster.Snapshot{Services: []corev1.Service{svc}, EndpointSlices: []discoveryv1.EndpointSlice{{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns1", Name: "web-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}, {Name: &metricsName, Port: &metrics}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.5"}},
			{Addresses: []string{"10.244.0.6"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
		},
	}}}
	eps := EndpointsFromSlices(snap)
	if len(eps) != 1 || eps[0].Namespace != "ns1" || eps[0].Name != "web" || len(eps[0].Subsets) != 1 {
		t.Fatalf("got %+v", eps)
	}
	sub := eps[0].Subsets[0]
	if len(sub.Addresses) != 1 || sub.Addresses[0].IP != "10.244.0.5" ||
		len(sub.NotReadyAddresses) != 1 || sub.NotReadyAddresses[0].IP != "10.244.0.6" ||
		len(sub.Ports) != 1 || sub.Ports[0].Name != "http" || sub.Ports[0].Port != 8080 || sub.Ports[0].Protocol != "TCP" {
		t.Errorf("got subset %+v", sub)
	}
}
