package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// nodesFixture adds to builderFixture three nodes that no endpoint names
// by nodeName, in both zones, an internal traffic policy Local, a Service
// whose endpoints name nodes in forNodes hints and one with forZones
// hints: what a build for another node must see differently.
const nodesFixture = builderFixture + `---
apiVersion: v1
kind: Node
metadata: {name: node-3, labels: {topology.kubernetes.io/zone: zone-a}}
---
apiVersion: v1
kind: Node
metadata: {name: node-4, labels: {topology.kubernetes.io/zone: zone-a}}
---
apiVersion: v1
kind: Node
metadata: {name: node-5, labels: {topology.kubernetes.io/zone: zone-b}}
---
apiVersion: v1
kind: Service
metadata: {name: zoned, namespace: ns3}
spec:
  clusterIP: 10.96.0.32
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: zoned-a, namespace: ns3, labels: {kubernetes.io/service-name: zoned}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.10], nodeName: node-1, conditions: {ready: true}, hints: {forZones: [{name: zone-a}]}}
- {addresses: [10.244.2.10], nodeName: node-2, conditions: {ready: true}, hints: {forZones: [{name: zone-b}]}}
---
apiVersion: v1
kind: Service
metadata: {name: near, namespace: ns3}
spec:
  clusterIP: 10.96.0.30
  internalTrafficPolicy: Local
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: hinted, namespace: ns3}
spec:
  clusterIP: 10.96.0.31
  trafficDistribution: PreferSameNode
  ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: near-a, namespace: ns3, labels: {kubernetes.io/service-name: near}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.3.9], nodeName: node-3, conditions: {ready: true}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: hinted-a, namespace: ns3, labels: {kubernetes.io/service-name: hinted}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.9], nodeName: node-1, conditions: {ready: true}, hints: {forNodes: [{name: node-4}]}}
- {addresses: [10.244.2.9], nodeName: node-2, conditions: {ready: true}, hints: {forNodes: [{name: node-2}]}}
`

// TestBuilderAcrossNodes holds one Builder, building node after node of
// one snapshot as plan --all-nodes does, to Build for each node: a
// Service whose endpoints name neither the node before nor this one is
// taken over, and must be what Build makes of it.
func TestBuilderAcrossNodes(t *testing.T) {
	s := mustDecode(t, nodesFixture)
	if err := s.VersionByContent(); err != nil {
		t.Fatal(err)
	}
	var inc Builder
	var before *nodetable.Tables
	prevNode := ""
	for _, node := range []string{"node-1", "node-3", "node-4", "node-5", "node-3", "node-2", "node-4", "node-3", "node-1", "node-5", "node-4"} {
		cfg := Config{NodeName: node}
		got, tables, warnings := againstBuild(t, &inc, s, cfg)
		if tables != "" {
			t.Errorf("%s: tables differ from Build's (-Build +Builder):\n%s", node, tables)
		}
		if warnings != "" {
			t.Errorf("%s: warnings differ from Build's (-Build +Builder):\n%s", node, warnings)
		}
		if prevNode == "node-3" && node == "node-4" {
			// ns1/web's endpoints name node-1 and node-2.
			prev := portNamed(t, before.IPv4, "ns1/web:http")
			if this := portNamed(t, got.IPv4, "ns1/web:http"); &prev.AllEndpoints[0] != &this.AllEndpoints[0] {
				t.Errorf("%s: ns1/web names neither node, but its endpoints were built again", node)
			}
		}
		before, prevNode = got, node
	}
}

// TestBuilderWalksAFleet walks one Builder over the nodes of a generated
// cluster in a shuffled order, with every kind of Service a node can see
// differently (traffic policies Local, forNodes and forZones hints, not
// ready endpoints, endpoints without a node), each build held to Build.
func TestBuilderWalksAFleet(t *testing.T) {
	s := fleetYAML(12, 40)
	snap := mustDecode(t, s)
	if err := snap.VersionByContent(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var inc Builder
	for step := range 60 {
		node := fmt.Sprintf("node-%d", rng.IntN(12))
		cfg := Config{NodeName: node}
		if _, tables, _ := againstBuild(t, &inc, snap, cfg); tables != "" {
			t.Fatalf("step %d, %s: tables differ from Build's (-Build +Builder):\n%s", step, node, tables)
		}
	}
}

// fleetYAML is a cluster of nodes Nodes in three zones and services
// Services of five endpoints each, the kind of Service and of endpoint
// varying with its number.
func fleetYAML(nodes, services int) string {
	var b strings.Builder
	for i := range nodes {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Node\nmetadata: {name: node-%d, labels: {topology.kubernetes.io/zone: zone-%d}}\n", i, i%3)
	}
	for i := range services {
		policy := [...]string{"", "externalTrafficPolicy: Local", "internalTrafficPolicy: Local", ""}[i%4]
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, namespace: ns}\nspec:\n  type: NodePort\n  clusterIP: 10.96.1.%d\n  %s\n  ports: [{name: http, port: 80, nodePort: %d, protocol: TCP}]\n",
			i, i, policy, 30000+i)
		fmt.Fprintf(&b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: svc-%d-a, namespace: ns, labels: {kubernetes.io/service-name: svc-%d}}\naddressType: IPv4\nports: [{name: http, port: 8080, protocol: TCP}]\nendpoints:\n", i, i)
		for j := range 5 {
			k := i*5 + j
			ep := fmt.Sprintf("  - addresses: [10.244.%d.%d]\n    conditions: {ready: %v}\n", k/250, k%250+1, k%7 != 3)
			if k%11 != 5 {
				ep += fmt.Sprintf("    nodeName: node-%d\n", (k*7)%nodes)
			}
			switch i % 5 {
			case 1:
				ep += fmt.Sprintf("    hints: {forZones: [{name: zone-%d}]}\n", j%3)
			case 3:
				ep += fmt.Sprintf("    hints: {forNodes: [{name: node-%d}]}\n", (k*5)%nodes)
			}
			b.WriteString(ep)
		}
	}
	return b.String()
}
