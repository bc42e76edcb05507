package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// walkFleet is a random cluster: Services of several slices, endpoints
// with random conditions, nodeNames, forNodes and forZones hints (or
// none), nodes in random zones.
func walkFleet(zones []int, seeds []uint64) string {
	nodes, services := len(zones), len(seeds)
	var b strings.Builder
	for i := range nodes {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Node\nmetadata: {name: node-%d, labels: {topology.kubernetes.io/zone: zone-%d}}\n", i, zones[i])
	}
	cond := []string{"{ready: true}", "{ready: false}", "{ready: false, serving: true, terminating: true}", "{ready: false, serving: false, terminating: true}", "{}"}
	for i := range services {
		rng := rand.New(rand.NewPCG(seeds[i], 3))
		policy := [...]string{"", "externalTrafficPolicy: Local", "internalTrafficPolicy: Local", ""}[rng.IntN(4)]
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc-%d, namespace: ns}\nspec:\n  type: NodePort\n  clusterIP: 10.96.1.%d\n  %s\n  ports: [{name: http, port: 80, nodePort: %d, protocol: TCP}]\n",
			i, i, policy, 30000+i)
		hintKind := rng.IntN(4) // per Service, as the controller sets them
		for s := range 1 + rng.IntN(3) {
			fmt.Fprintf(&b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: svc-%d-%d, namespace: ns, labels: {kubernetes.io/service-name: svc-%d}}\naddressType: IPv4\nports: [{name: http, port: 8080, protocol: TCP}]\nendpoints:\n", i, s, i)
			for j := range rng.IntN(4) {
				ep := fmt.Sprintf("  - addresses: [10.%d.%d.%d]\n    conditions: %s\n", 100+i, s, j+1, cond[rng.IntN(len(cond))])
				if rng.IntN(5) != 0 {
					ep += fmt.Sprintf("    nodeName: node-%d\n", rng.IntN(nodes))
				}
				switch {
				case hintKind == 1 && rng.IntN(6) != 0:
					ep += fmt.Sprintf("    hints: {forZones: [{name: zone-%d}]}\n", rng.IntN(3))
				case hintKind == 2 && rng.IntN(6) != 0:
					ep += fmt.Sprintf("    hints: {forNodes: [{name: node-%d}]}\n", rng.IntN(nodes))
				case hintKind == 3 && rng.IntN(6) != 0:
					ep += fmt.Sprintf("    hints: {forNodes: [{name: node-%d}], forZones: [{name: zone-%d}]}\n", rng.IntN(nodes), rng.IntN(3))
				}
				b.WriteString(ep)
			}
		}
	}
	return b.String()
}

// TestBuilderRandomWalk: one Builder over snapshots that change
// (as in apply --watch, and OLD/NEW of plan --all-nodes) and nodes that
// change, each build held to Build.
func TestBuilderRandomWalk(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var inc Builder
		snaps := []*Snapshot{}
		zones := make([]int, 5)
		seeds := make([]uint64, 12)
		for i := range seeds {
			seeds[i] = rng.Uint64()
		}
		for range 4 {
			for i := range zones {
				if rng.IntN(2) == 0 {
					zones[i] = rng.IntN(3)
				}
			}
			for range 2 {
				seeds[rng.IntN(len(seeds))] = rng.Uint64()
			}
			s := mustDecode(t, walkFleet(zones, seeds))
			if err := s.VersionByContent(); err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, s)
		}
		for step := range 40 {
			snap := snaps[rng.IntN(len(snaps))]
			cfg := Config{NodeName: fmt.Sprintf("node-%d", rng.IntN(5))}
			_, tables, warnings := againstBuild(t, &inc, snap, cfg)
			if tables != "" {
				t.Fatalf("seed %d step %d %s: (-Build +Builder):\n%s", seed, step, cfg.NodeName, tables)
			}
			if warnings != "" {
				t.Fatalf("seed %d step %d: warnings (-Build +Builder):\n%s", seed, step, warnings)
			}
		}
	}
}
