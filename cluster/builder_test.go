package cluster

import (
	"fmt"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// builderFixture adds to buildFixture a second Service with two slices
// that share an endpoint, and a slice that Build warns about.
const builderFixture = buildFixture + `---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ns2}
spec:
  clusterIP: 10.96.0.20
  ports: [{name: grpc, port: 9000, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: api-a, namespace: ns2, labels: {kubernetes.io/service-name: api}}
addressType: IPv4
ports: [{name: grpc, port: 9000, protocol: TCP}, {name: dns, port: 5353, protocol: UDP}]
endpoints:
- {addresses: [10.244.1.7], nodeName: node-1, conditions: {ready: true}}
- {addresses: [10.244.2.7], nodeName: node-2, conditions: {ready: true}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: api-b, namespace: ns2, labels: {kubernetes.io/service-name: api}}
addressType: IPv4
ports: [{name: grpc, port: 9000, protocol: TCP}]
endpoints:
- {addresses: [10.244.2.7], nodeName: node-2, conditions: {ready: false, serving: true, terminating: true}}
- {addresses: [10.244.3.7], nodeName: node-3, conditions: {ready: true}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: stray, namespace: ns2}
addressType: IPv4
endpoints: [{addresses: [10.244.9.9]}]
`

// versioned gives every object a UID and resourceVersion "1", as the API
// server's objects have.
func versioned(t *testing.T) *Snapshot {
	s := mustDecode(t, builderFixture)
	for _, m := range metas(s) {
		m.UID = types.UID("uid-" + m.Namespace + "-" + m.Name)
		m.ResourceVersion = "1"
	}
	return s
}

func metas(s *Snapshot) []*metav1.ObjectMeta {
	var out []*metav1.ObjectMeta
	for i := range s.Nodes {
		out = append(out, &s.Nodes[i].ObjectMeta)
	}
	for i := range s.Services {
		out = append(out, &s.Services[i].ObjectMeta)
	}
	for i := range s.EndpointSlices {
		out = append(out, &s.EndpointSlices[i].ObjectMeta)
	}
	return out
}

// bump marks an object as written, as the API server does.
func bump(m *metav1.ObjectMeta) {
	n, _ := strconv.Atoi(m.ResourceVersion)
	m.ResourceVersion = strconv.Itoa(n + 1)
}

func sliceNamed(s *Snapshot, name string) *discoveryv1.EndpointSlice {
	for i := range s.EndpointSlices {
		if s.EndpointSlices[i].Name == name {
			return &s.EndpointSlices[i]
		}
	}
	panic("no slice " + name)
}

func serviceNamed(s *Snapshot, name string) *corev1.Service {
	for i := range s.Services {
		if s.Services[i].Name == name {
			return &s.Services[i]
		}
	}
	panic("no service " + name)
}

// builderSteps are the changes of TestBuilderMatchesBuild, each applied to
// the snapshot the step before left. Each one changes what some Service
// renders, and bumps the resourceVersion of what it writes.
var builderSteps = []struct {
	name   string
	cfg    Config
	change func(s *Snapshot)
}{
	{"unchanged", Config{NodeName: "node-1"}, func(*Snapshot) {}},
	{"endpoint moved", Config{NodeName: "node-1"}, func(s *Snapshot) {
		es := sliceNamed(s, "api-a")
		es.Endpoints[0].Addresses = []string{"10.244.1.8"}
		bump(&es.ObjectMeta)
	}},
	{"service port changed", Config{NodeName: "node-1"}, func(s *Snapshot) {
		svc := serviceNamed(s, "api")
		svc.Spec.Ports[0].Port = 9001
		bump(&svc.ObjectMeta)
	}},
	{"slice deleted", Config{NodeName: "node-1"}, func(s *Snapshot) {
		i := sliceIndex(s, "api-b")
		s.EndpointSlices = append(s.EndpointSlices[:i:i], s.EndpointSlices[i+1:]...)
	}},
	{"zone changed", Config{NodeName: "node-1"}, func(s *Snapshot) {
		s.Nodes[0].Labels = map[string]string{corev1.LabelTopologyZone: "zone-b"}
		bump(&s.Nodes[0].ObjectMeta)
	}},
	{"other node", Config{NodeName: "node-2"}, func(*Snapshot) {}},
	{"slice without a version", Config{NodeName: "node-2"}, func(s *Snapshot) {
		es := sliceNamed(s, "web-v4")
		es.ResourceVersion = ""
		es.Endpoints = es.Endpoints[:1]
	}},
	{"service gone", Config{NodeName: "node-2"}, func(s *Snapshot) {
		i := serviceIndex(s, "web")
		s.Services = append(s.Services[:i:i], s.Services[i+1:]...)
	}},
}

func sliceIndex(s *Snapshot, name string) int {
	for i := range s.EndpointSlices {
		if s.EndpointSlices[i].Name == name {
			return i
		}
	}
	panic("no slice " + name)
}

func serviceIndex(s *Snapshot, name string) int {
	for i := range s.Services {
		if s.Services[i].Name == name {
			return i
		}
	}
	panic("no service " + name)
}

// TestBuilderMatchesBuild holds an incremental Builder to Build over a
// series of changes: after each one, the tables and the warnings must be
// the ones a fresh Build gives.
func TestBuilderMatchesBuild(t *testing.T) {
	s := versioned(t)
	var inc Builder
	for _, step := range builderSteps {
		s = s.canonical()
		step.change(s)
		_, tables, warnings := againstBuild(t, &inc, s, step.cfg)
		if tables != "" {
			t.Errorf("%s: tables differ from Build's (-Build +Builder):\n%s", step.name, tables)
		}
		if warnings != "" {
			t.Errorf("%s: warnings differ from Build's (-Build +Builder):\n%s", step.name, warnings)
		}
	}
}

// againstBuild builds s for cfg with Build and with inc, and returns
// inc's tables and how its tables and its warnings differ from Build's
// (-Build +Builder; "" where they do not).
func againstBuild(t *testing.T, inc *Builder, s *Snapshot, cfg Config) (got *nodetable.Tables, tables, warnings string) {
	t.Helper()
	want, wantWarn, err := Build(s, cfg)
	if err != nil {
		t.Fatalf("%s: Build: %v", cfg.NodeName, err)
	}
	got, gotWarn, err := inc.Build(s, cfg)
	if err != nil {
		t.Fatalf("%s: Builder.Build: %v", cfg.NodeName, err)
	}
	return got, cmpDiff(want, got), cmpDiff(warningStrings(wantWarn), warningStrings(gotWarn))
}

// TestBuilderReusesUnchangedServices checks that the Builder rebuilds only
// what changed: after one slice of ns2/api changes, ns1/web's endpoints are
// the very lists of the build before, and ns2/api's are new.
func TestBuilderReusesUnchangedServices(t *testing.T) {
	s := versioned(t)
	var inc Builder
	cfg := Config{NodeName: "node-1"}
	before, _, err := inc.Build(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s = s.canonical()
	es := sliceNamed(s, "api-a")
	es.Endpoints[1].Addresses = []string{"10.244.2.8"}
	bump(&es.ObjectMeta)
	after, _, err := inc.Build(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string) bool {
		a, b := portNamed(t, before.IPv4, name), portNamed(t, after.IPv4, name)
		return &a.AllEndpoints[0] == &b.AllEndpoints[0]
	}
	if !same("ns1/web:http") {
		t.Error("ns1/web did not change, but its endpoints were built again")
	}
	if same("ns2/api:grpc") {
		t.Error("ns2/api's slice changed, but its endpoints were reused")
	}
	if got := epStrings(portNamed(t, after.IPv4, "ns2/api:grpc").AllEndpoints); fmt.Sprint(got) != "[10.244.1.7:9000 10.244.2.7:9000 10.244.2.8:9000 10.244.3.7:9000]" {
		t.Errorf("ns2/api:grpc endpoints after the change: %v", got)
	}
}

func portNamed(t *testing.T, table *nodetable.ServiceTable, name string) *nodetable.ServicePort {
	t.Helper()
	for i := range table.Ports {
		if table.Ports[i].Name.String() == name {
			return &table.Ports[i]
		}
	}
	t.Fatalf("no port %s in %v", name, portNames(table))
	return nil
}

// TestBuilderForgetsWhatWent: the memo a build leaves holds what that
// build saw and nothing older, though its maps are reused from build to
// build: a Service deleted, then its slices, leave no entry behind.
func TestBuilderForgetsWhatWent(t *testing.T) {
	s := versioned(t)
	var inc Builder
	cfg := Config{NodeName: "node-1"}
	sizes := func() [4]int {
		p := inc.prev
		return [4]int{len(p.services), len(p.slices), len(p.groups), len(p.ports)}
	}
	for range 3 { // the third build is the first to reuse a memo's maps
		if _, _, err := inc.Build(s, cfg); err != nil {
			t.Fatal(err)
		}
	}
	full := sizes()
	s = s.canonical()
	i := serviceIndex(s, "api")
	s.Services = append(s.Services[:i], s.Services[i+1:]...)
	for range 2 {
		if _, _, err := inc.Build(s, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if got := sizes(); got[0] != full[0]-1 || got[3] >= full[3] {
		t.Errorf("after deleting a Service, memo sizes %v (services, slices, groups, ports); before %v", got, full)
	}
	var kept []discoveryv1.EndpointSlice
	for _, es := range s.EndpointSlices {
		if es.Labels[discoveryv1.LabelServiceName] != "api" {
			kept = append(kept, es)
		}
	}
	s.EndpointSlices = kept
	for range 2 {
		if _, _, err := inc.Build(s, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if got := sizes(); got[1] >= full[1] || got[2] >= full[2] {
		t.Errorf("after deleting its slices, memo sizes %v; before %v", got, full)
	}
}
