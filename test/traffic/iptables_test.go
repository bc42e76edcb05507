package traffic_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/traffic"
)

// iptablesBackends are the two implementations of iptables a node may use.
var iptablesBackends = []string{"legacy", "nft"}

// TestIPTablesTraffic loads the rendered iptables ruleset of every scenario
// into a lab node with each backend and checks where real connections
// land. Each scenario has its own lab, so all of them, for both backends,
// run in parallel.
func TestIPTablesTraffic(t *testing.T) {
	testenv.RequireRoot(t)
	for _, backend := range iptablesBackends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testenv.RequireTools(t, "iptables-"+backend+"-restore", "ip6tables-"+backend+"-restore")
			for _, sc := range traffic.Scenarios() {
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					traffic.Run(t, sc, traffic.Mode{Name: "iptables", Load: iptablesLoader(backend), Evaluator: iptablesEvaluator})
				})
			}
		})
	}
}

// iptablesLoader renders node1's ruleset for each family with the Service
// ports and loads it with iptables-<backend>-restore (ip6tables for IPv6)
// into the lab's node. If the test fails, it logs what the kernel holds.
func iptablesLoader(backend string) traffic.Loader {
	return func(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
		t.Helper()
		cfg := labConfig()
		// The counters of kube-proxy's nfacct matches, as apply makes them.
		if err := lab.Node().EnsureNFAcct(); err != nil {
			t.Fatal(err)
		}
		for _, table := range usedTables(t, snap) {
			family := table.Family
			bin := "iptables-" + backend
			if family == nodetable.IPv6 {
				bin = "ip6tables-" + backend
			}
			rules := render.IPTables(table, cfg).String()
			// -w: iptables-legacy takes /run/xtables.lock, which
			// parallel labs share.
			if _, err := lab.Node().RunInput(t.Context(), []byte(rules), bin+"-restore", "-w", "10"); err != nil {
				t.Fatalf("load rendered %s rules: %v\n%s", family, err, rules)
			}
			t.Cleanup(func() { logRulesIfFailed(t, lab, bin+"-save") })
		}
	}
}

// logRulesIfFailed logs the node's live ruleset, with counters, after a
// failure: the packet counts show which rule took the connection.
func logRulesIfFailed(t *testing.T, lab *netlab.Lab, save string) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := lab.Node().Run(ctx, save, "-c")
	if err != nil {
		t.Logf("%s: %v", save, err)
		return
	}
	t.Logf("%s -c in the node after the failure:\n%s", save, out)
}

// labConfig is the proxy configuration that matches netlab's addresses.
func labConfig() render.Config {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR, netlab.ClusterCIDRv6}
	return cfg
}

// usedTables builds node1's tables and returns the IPv4 one, and the IPv6
// one if it has Service ports. Build warnings fail the test.
func usedTables(t *testing.T, snap *cluster.Snapshot) []*nodetable.ServiceTable {
	t.Helper()
	tables, warnings, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatalf("build tables: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("build: %s", w)
	}
	out := []*nodetable.ServiceTable{tables.IPv4}
	if len(tables.IPv6.Ports) > 0 {
		out = append(out, tables.IPv6)
	}
	return out
}
