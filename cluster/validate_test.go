package cluster

import (
	"strings"
	"testing"
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
