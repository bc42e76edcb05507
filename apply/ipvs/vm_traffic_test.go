package ipvs

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/traffic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// TestIPVSTraffic runs the shared traffic scenarios (test/traffic)
// through ipvs mode: node1's state is rendered, planned and applied with
// this package's Client into the lab's node, and real connections must
// land where the scenario says.
func TestIPVSTraffic(t *testing.T) {
	vmtest.RequireGuest(t)
	for _, sc := range withIPVSExpectations(t, traffic.Scenarios()) {
		t.Run(sc.Name, func(t *testing.T) {
			traffic.Run(t, sc, traffic.Mode{Name: "ipvs", Load: ipvsLoader, Evaluator: ipvsEvaluator})
		})
	}
}

// ipvsExpectations are the probes where kube-proxy's ipvs mode behaves
// differently from its iptables mode, by "scenario/probe". They apply
// where the shared table has no "ipvs" entry of its own.
var ipvsExpectations = map[string]traffic.Expectation{
	// No localhost NodePorts: virtual servers are made for the node's
	// addresses except loopback (nodeAddressSet).
	"nodeport/node to localhost nodePort":                     traffic.Refuse(),
	"nodeport/node to localhost UDP nodePort":                 traffic.Refuse(),
	"etp-local/node to localhost nodePort is short-circuited": traffic.Refuse(),
	// A virtual server of an eTP=Local Service holds only the local
	// endpoints, whoever connects: there is no short-circuit for
	// traffic from inside the node.
	"etp-local/pod to LB IP is short-circuited":     traffic.Spread("fe-local"),
	"etp-local/node to nodePort is short-circuited": traffic.Spread("fe-local"),
	// Without local endpoints kube-proxy falls back to the cluster ones
	// (syncEndpoint: "Allow access from local PODs even if no local
	// endpoints exist"). On a real node the remote pod's reply would not
	// come back; in the lab its pod hangs off the same node, so it does.
	"etp-local-remote-only/client to nodePort is dropped": traffic.Spread("ro-remote"),
	"etp-local-remote-only/client to LB IP is dropped":    traffic.Spread("ro-remote"),
	// A virtual server without real servers lets the packet through to
	// the node's own stack, which resets the connection.
	"itp-local/pod to service without local endpoints is dropped": traffic.Refuse(),
}

// withIPVSExpectations returns the scenarios with ipvsExpectations set as
// the probes' "ipvs" overrides, and fails if one names no probe.
func withIPVSExpectations(t *testing.T, scs []traffic.Scenario) []traffic.Scenario {
	used := map[string]bool{}
	for i := range scs {
		scs[i].Probes = slices.Clone(scs[i].Probes)
		for j := range scs[i].Probes {
			pr := &scs[i].Probes[j]
			e, ok := ipvsExpectations[scs[i].Name+"/"+pr.Name]
			if !ok {
				continue
			}
			used[scs[i].Name+"/"+pr.Name] = true
			if _, set := pr.ExpectIn["ipvs"]; set {
				continue
			}
			pr.ExpectIn = maps.Clone(pr.ExpectIn) // it may be shared between probes
			if pr.ExpectIn == nil {
				pr.ExpectIn = map[string]traffic.Expectation{}
			}
			pr.ExpectIn["ipvs"] = e
		}
	}
	for name := range ipvsExpectations {
		if !used[name] {
			t.Errorf("ipvsExpectations names %q, which is no probe of the shared scenarios", name)
		}
	}
	return scs
}

// ipvsLoader applies node1's ipvs state for the snapshot to the lab's node
// and checks that a second plan is empty. If the test fails, it logs the
// node's IPVS table and helper chains.
func ipvsLoader(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
	t.Helper()
	tables, warnings, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatalf("build tables: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("build: %s", w)
	}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR, netlab.ClusterCIDRv6}
	desired := []*ipvs.Ruleset{render.IPVS(tables.IPv4, cfg, render.IPVSOptions{})}
	if len(tables.IPv6.Ports) > 0 {
		desired = append(desired, render.IPVS(tables.IPv6, cfg, render.IPVSOptions{}))
	}
	k, err := OpenKernel("/run/netns/" + lab.Node().Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	own := render.IPVSOwnership(nil)
	c := &Client{Kernel: k, IPTables: &applyipt.Client{Exec: plainExec{lab.Node()}, Backend: applyipt.NFT, Ownership: own.Chains}, Ownership: own}
	if err := c.EnsureSysctls(false); err != nil {
		t.Fatal(err)
	}
	apply(t, c, desired...)
	// A plan right after must be empty; if not, report it and still send
	// the traffic.
	for _, p := range mustPlan(t, c, desired...) {
		if !p.Changes.Empty() {
			t.Errorf("plan after apply is not empty:\n%s", planText(t, []*Plan{p}))
		}
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, cmd := range [][]string{{"cat", "/proc/net/ip_vs"}, {"iptables-nft-save", "-c"}, {"ipset", "save"}, {"ip", "addr"}} {
			out, err := lab.Node().Run(ctx, cmd[0], cmd[1:]...)
			t.Logf("%v (%v):\n%s", cmd, err, out)
		}
	})
}
