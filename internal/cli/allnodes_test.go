package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// --all-nodes gives every node exactly the plan that plan --against
// --node-name gives it alone, in every mode, though it shares builds and
// renders between nodes and between the snapshots, and in iptables mode
// plans one node for all those it finds the same (nodeClasses). The change
// keeps the objects' resourceVersions, as a hand-edited file does: the
// sharing must go by content. There are more nodes than endpoints of
// Services with a Local policy, so that nodes do share a plan, in zones,
// pod ranges and source ranges that set some of them apart.
func TestAllNodesEqualsEachNodeAlone(t *testing.T) {
	const nodes = 30
	newPath, oldPath := writeFleetWith(t, nodes, 12, varyFleet)
	runs := [][]string{{"--detect-local-mode=NodeCIDR"}}
	for _, mode := range kernelModes {
		runs = append(runs, []string{"--mode=" + string(mode)})
	}
	for _, flags := range runs {
		mode := strings.Join(flags, " ")
		args := append([]string{"plan", "-f", newPath, "--against", oldPath, "-o", "json"}, flags...)
		out, stderr, code := run(t, "", append(args, "--all-nodes")...)
		if code != ExitChanges {
			t.Fatalf("%s: --all-nodes: exit %d: %s", mode, code, stderr)
		}
		var all struct {
			Kind   string `json:"kind"`
			Groups []struct {
				Nodes []string        `json:"nodes"`
				Sets  json.RawMessage `json:"changeSets"`
			} `json:"groups"`
		}
		if err := json.Unmarshal([]byte(out), &all); err != nil || all.Kind != kindNodePlans {
			t.Fatalf("%s: %v, kind %q", mode, err, all.Kind)
		}
		seen := 0
		for _, g := range all.Groups {
			for _, node := range g.Nodes {
				seen++
				one, stderr, code := run(t, "", append(args, "--node-name="+node)...)
				if code == ExitError {
					t.Fatalf("%s, node %s: %s", mode, node, stderr)
				}
				var alone struct {
					Sets json.RawMessage `json:"changeSets"`
				}
				if err := json.Unmarshal([]byte(one), &alone); err != nil {
					t.Fatal(err)
				}
				if !jsonEqual(t, alone.Sets, g.Sets) {
					t.Errorf("%s, node %s: its group's plan differs from its own:\ngroup %s\nalone %s", mode, node, g.Sets, alone.Sets)
				}
			}
		}
		if seen != nodes || len(all.Groups) < 2 {
			t.Errorf("%s: %d nodes in %d groups, want %d nodes in 2 or more", mode, seen, len(all.Groups), nodes)
		}
	}
}

// varyFleet gives the fleet what makes nodes see Services differently
// besides local endpoints: pod ranges (for NodeCIDR mode), load balancers
// whose source ranges hold some nodes' addresses and not others' (one
// range changes), and topology hints by zone.
func varyFleet(s *cluster.Snapshot, change bool) {
	for i := range s.Nodes {
		cidr := fmt.Sprintf("10.200.%d.0/24", i)
		s.Nodes[i].Spec.PodCIDR, s.Nodes[i].Spec.PodCIDRs = cidr, []string{cidr}
	}
	for i := range s.Services {
		svc := &s.Services[i]
		if i%3 == 1 {
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
			svc.Spec.Ports[0].NodePort = int32(31000 + i)
			svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.0/30"}
			if change && i == 1 {
				svc.Spec.LoadBalancerSourceRanges = []string{"192.168.0.4/30"}
			}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("198.51.100.%d", i)}}
		}
	}
	for i := range s.EndpointSlices {
		if i%5 != 2 {
			continue
		}
		for j := range s.EndpointSlices[i].Endpoints {
			zone := fmt.Sprintf("zone-%d", j%3)
			s.EndpointSlices[i].Endpoints[j].Zone = &zone
			s.EndpointSlices[i].Endpoints[j].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
		}
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatal("not JSON")
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// The text form heads each group with its nodes and ends with the count;
// identical files plan no changes on any node, with exit code 0.
func TestAllNodesText(t *testing.T) {
	newPath, oldPath := writeFleet(t, 4, 3)
	out, stderr, code := run(t, "", "plan", "-f", newPath, "--against", oldPath, "--all-nodes", "--family=ipv4")
	if code != ExitChanges || !strings.HasPrefix(out, "=== node") || !strings.HasSuffix(out, "4 nodes in 2 groups.\n") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
	out, stderr, code = run(t, "", "plan", "-f", oldPath, "--against", oldPath, "--all-nodes", "--family=ipv4")
	if code != ExitOK || out != "=== nodes node0000, node0001, node0002, node0003 (4)\nNo changes.\n4 nodes in 1 group.\n" {
		t.Errorf("same files: exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
}

// The flags that make no sense with --against, or without it, are refused
// before anything is read; those that only do nothing are named on stderr.
func TestAgainstFlags(t *testing.T) {
	old, err := os.ReadFile("../../testdata/golden/review/example-old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--example", "--all-nodes"}, "--all-nodes needs --against OLD"},
		{[]string{"--example", "--against", "-", "--out", "p.json"}, "--out saves a plan for apply FILE"},
		{[]string{"--against", "-", "-f", "-"}, "cannot both read stdin"},
		{[]string{"--example", "--against", "-", "--all-nodes", "--node-name=node1"}, "--all-nodes plans every node of the snapshots: drop --node-name"},
		{[]string{"--example", "--against", "-", "--all-nodes", "--hostname-override=node1"}, "drop --hostname-override"},
		{[]string{"--example", "--against", "-", "--all-nodes", "--node-ip=10.9.9.9"}, "drop --node-ip"},
		{[]string{"--example", "--against", "-", "-o", "wide"}, `--output "wide": must be text, json, yaml, markdown, name, or a template`},
		{[]string{"--example", "--against", "missing.yaml"}, "missing.yaml"},
	} {
		args := append([]string{"plan"}, c.args...)
		_, stderr, code := run(t, string(old), args...)
		if code != ExitError || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, stderr, c.want)
		}
	}
	_, stderr, code := run(t, string(old), "plan", "--example", "--against", "-", "--iptables-backend=nft", "--state-dir=")
	if code != ExitChanges || !strings.Contains(stderr, "warning: --iptables-backend has no effect with --against") ||
		!strings.Contains(stderr, "warning: --state-dir has no effect with --against") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// plan --against runs on systems without the kernel plan reads; plan
// without it still stops at once.
func TestPlanAgainstRunsElsewhere(t *testing.T) {
	old, err := os.ReadFile("../../testdata/golden/review/example-old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, goos := range []string{"darwin", "windows"} {
		stdout, stderr, code := runOnWithStdin(t, goos, string(old), "diff", "--example", "--against", "-")
		if code != ExitChanges || !strings.Contains(stdout, "Plan: ") {
			t.Errorf("%s: exit %d, stderr %q", goos, code, stderr)
		}
		_, stderr, code = runOnWithStdin(t, goos, "", "diff", "--example")
		if code != ExitError || !strings.Contains(stderr, "needs Linux") {
			t.Errorf("%s, without --against: exit %d, stderr %q", goos, code, stderr)
		}
	}
}

// A node that only NEW has is planned against nothing, and named; one that
// only OLD has is named and not planned.
func TestAllNodesJoinAndLeave(t *testing.T) {
	old, err := os.ReadFile("../../testdata/golden/review/example-old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.ReplaceAll(string(old), "node1", "node9")
	out, stderr, code := run(t, renamed, "plan", "--example", "--against", "-", "--all-nodes", "--family=ipv4")
	if code != ExitChanges || !strings.Contains(out, "=== node node1\n") || !strings.Contains(out, "+:KUBE-SERVICES - [0:0]") ||
		!strings.Contains(stderr, "warning: node node1 not in <stdin>: planned against an empty ruleset") ||
		!strings.Contains(stderr, "warning: node node9 only in <stdin>, which the change removes: not planned") {
		t.Errorf("exit %d, stderr %q, out:\n%s", code, stderr, out)
	}
}

// In iptables mode --all-nodes renders one node for all those that host
// no endpoint of a Service with a Local policy (the fleet has no hints,
// so zones do not part them), and each of the others on its own; in the
// other modes it renders every node. --progress says how many.
func TestAllNodesRendersOnePerClass(t *testing.T) {
	const nodes = 30
	_, oldPath := writeFleet(t, nodes, 12)
	hosts := map[string]bool{}
	snap := fleetSnapshot(nodes, 12, false)
	for i, slice := range snap.EndpointSlices {
		if snap.Services[i].Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			for _, ep := range slice.Endpoints {
				hosts[*ep.NodeName] = true
			}
		}
	}
	for mode, want := range map[Mode]int{ModeIPTables: len(hosts) + 1, ModeNFTables: nodes, ModeIPVS: nodes} {
		_, stderr := runWithClock(t, &steppingClock{}, "plan", "-f", oldPath, "--against", oldPath, "--all-nodes",
			"--family=ipv4", "--mode="+string(mode), "--progress")
		line := fmt.Sprintf("planned %d nodes, %d of them rendered: 1 groups", nodes, want)
		if !strings.Contains(stderr, line) {
			t.Errorf("%s: stderr does not say %q:\n%s", mode, line, stderr)
		}
	}
	if len(hosts) >= nodes-1 {
		t.Fatalf("the fleet's Local endpoints are on %d of %d nodes: no class to share", len(hosts), nodes)
	}
}
