package cluster

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hostile name in a file must never reach a rule: the API server would
// refuse the object, so Build skips it and says why. The Service below
// once wrote five rules into the foreign chains filter INPUT and nat
// PREROUTING through its iptables comment.
func TestBuildSkipsNamesTheAPIServerRejects(t *testing.T) {
	in := `apiVersion: v1
kind: Service
metadata: {name: "web\"\n-A PREROUTING -s 10.66.66.66/32 -j ACCEPT\n#", namespace: ns1}
spec: {clusterIP: 10.96.0.1, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: ok, namespace: "Bad_NS"}
spec: {clusterIP: 10.96.0.2, ports: [{port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Service
metadata: {name: ok, namespace: ns1}
spec:
  clusterIP: 10.96.0.3
  ports:
  - {name: "http\"x", port: 80, protocol: TCP}
  - {name: http, port: 8080, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: "ok-abc\nx", namespace: ns1, labels: {kubernetes.io/service-name: ok}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ok-def, namespace: ns1, labels: {kubernetes.io/service-name: "ok\"\n-A INPUT -j ACCEPT"}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.2]}]
ports: [{name: http, port: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: ok-ghi, namespace: ns1, labels: {kubernetes.io/service-name: ok}}
addressType: IPv4
endpoints: [{addresses: [10.0.0.3]}]
ports: [{name: "http x", port: 8080, protocol: TCP}, {name: http, port: 8080, protocol: TCP}]
`
	tables, warnings := mustBuild(t, in, Config{})
	if got := portNames(tables.IPv4); len(got) != 1 || got[0] != "ns1/ok:http/TCP" {
		t.Errorf("ports = %v, want only ns1/ok:http/TCP", got)
	}
	if eps := tables.IPv4.Ports[0].AllEndpoints; len(eps) != 1 || eps[0].String() != "10.0.0.3:8080" {
		t.Errorf("endpoints = %v, want only 10.0.0.3:8080", eps)
	}
	for _, w := range warnings {
		if strings.Contains(w, "\n") {
			t.Errorf("a warning spans lines: %q", w)
		}
	}
	for _, want := range []string{
		`"service ns1/web\"\n-A PREROUTING -s 10.66.66.66/32 -j ACCEPT\n#": invalid metadata.name`,
		`service Bad_NS/ok: invalid metadata.namespace "Bad_NS"`,
		`service ns1/ok: invalid ports[0].name "http\"x"`,
		`"endpointslice ns1/ok-abc\nx": invalid metadata.name`,
		`endpointslice ns1/ok-def: invalid kubernetes.io/service-name label`,
		`endpointslice ns1/ok-ghi: invalid ports[0].name "http x"`,
	} {
		if !containsSubstring(warnings, want) {
			t.Errorf("no warning contains %q in:\n%s", want, strings.Join(warnings, "\n"))
		}
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// The fields the API server defaults must hold values it accepts; a Service
// with any other value is skipped, as the API server would refuse it. Two
// clusterIPs without ipFamilyPolicy are refused too: the policy defaults
// to SingleStack. A Service built in code, not defaulted, is accepted.
func TestBuildSkipsServiceSpecsTheAPIServerRejects(t *testing.T) {
	in := `apiVersion: v1
kind: Service
metadata: {name: a-type, namespace: ns}
spec: {type: Foo, clusterIP: 10.96.0.1, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b-affinity, namespace: ns}
spec: {sessionAffinity: Sticky, clusterIP: 10.96.0.2, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: c-etp, namespace: ns}
spec: {type: NodePort, externalTrafficPolicy: Global, clusterIP: 10.96.0.3, ports: [{port: 80, nodePort: 30003}]}
---
apiVersion: v1
kind: Service
metadata: {name: d-itp, namespace: ns}
spec: {internalTrafficPolicy: Node, clusterIP: 10.96.0.4, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: e-policy, namespace: ns}
spec: {ipFamilyPolicy: DualStack, clusterIP: 10.96.0.5, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: f-two-ips-no-policy, namespace: ns}
spec: {clusterIP: 10.96.0.6, clusterIPs: [10.96.0.6, "fd00::6"], ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: g-two-ips-dual, namespace: ns}
spec: {clusterIP: 10.96.0.7, clusterIPs: [10.96.0.7, "fd00::7"], ipFamilyPolicy: PreferDualStack, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: h-etp-on-clusterip, namespace: ns}
spec: {externalTrafficPolicy: Local, clusterIP: 10.96.0.8, ports: [{port: 80}]}
`
	tables, warnings := mustBuild(t, in, Config{})
	want := []string{
		`service ns/a-type: invalid spec.type "Foo": skipped`,
		`service ns/b-affinity: invalid spec.sessionAffinity "Sticky": skipped`,
		`service ns/c-etp: invalid spec.externalTrafficPolicy "Global": skipped`,
		`service ns/d-itp: invalid spec.internalTrafficPolicy "Node": skipped`,
		`service ns/e-policy: invalid spec.ipFamilyPolicy "DualStack": skipped`,
		`service ns/f-two-ips-no-policy: spec.ipFamilyPolicy SingleStack with two clusterIPs or ipFamilies ` +
			`(the API server's default when ipFamilyPolicy is left out): skipped`,
	}
	for _, w := range want {
		if !containsSubstring(warnings, w) {
			t.Errorf("no warning %q in:\n%s", w, strings.Join(warnings, "\n"))
		}
	}
	if len(warnings) != len(want)+1 { // and the missing Node
		t.Errorf("warnings:\n%s", strings.Join(warnings, "\n"))
	}
	// Older clusters stored externalTrafficPolicy on plain ClusterIP
	// Services; kube-proxy ignores it, and so does Build.
	wantPorts := []string{"ns/g-two-ips-dual/TCP", "ns/h-etp-on-clusterip/TCP"}
	if diff := cmpDiff(wantPorts, portNames(tables.IPv4)); diff != "" {
		t.Errorf("IPv4 ports (-want +got):\n%s", diff)
	}

	undefaulted := &Snapshot{Services: []corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1", "fd00::1"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}}}
	tables2, _, err := Build(undefaulted, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables2.IPv4.Ports) != 1 || len(tables2.IPv6.Ports) != 1 {
		t.Errorf("a Service built in code, without defaults: ports %v, %v", portNames(tables2.IPv4), portNames(tables2.IPv6))
	}
}
