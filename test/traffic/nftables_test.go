package traffic_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/traffic"
)

// TestNFTablesTraffic runs the same scenarios as the iptables modes with the
// nftables render applied into each lab's node through the tool's own
// netlink client (Plan, then Apply), as `apply --mode=nftables` does.
func TestNFTablesTraffic(t *testing.T) {
	testenv.RequireRoot(t)
	for _, sc := range traffic.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			traffic.Run(t, sc, traffic.Mode{Name: "nftables", Load: nftablesLoader, Evaluator: nftablesEvaluator})
		})
	}
}

// TestNFTablesCompactTraffic runs the same scenarios with the opt-in
// compact nftables layout (--nftables-layout=compact), which must behave
// as kube-proxy's layout does for every one of them.
func TestNFTablesCompactTraffic(t *testing.T) {
	testenv.RequireRoot(t)
	for _, sc := range traffic.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			traffic.Run(t, sc, traffic.Mode{Name: "nftables-compact", Like: "nftables", Load: nftablesCompactLoader, Evaluator: nftablesCompactEvaluator})
		})
	}
}

// nftablesLoader renders node1's nftables ruleset for each family with
// Service ports, and plans and applies it into the lab's node with a client
// opened there. A second plan must find nothing to change.
func nftablesLoader(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
	t.Helper()
	loadNFTables(t, lab, snap, labConfig())
}

// nftablesCompactLoader is nftablesLoader in the compact layout.
func nftablesCompactLoader(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
	t.Helper()
	cfg := labConfig()
	cfg.NFTablesLayout = render.NFTablesLayoutCompact
	loadNFTables(t, lab, snap, cfg)
}

func loadNFTables(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot, cfg render.Config) {
	t.Helper()
	var desired []*nft.Ruleset
	for _, table := range usedTables(t, snap) {
		desired = append(desired, render.NFTables(table, cfg))
	}
	err := lab.Node().Do(func() error {
		client, err := applynft.NewClient(render.NFTablesOwnership())
		if err != nil {
			return err
		}
		defer client.Close()
		plans, err := client.Plan(t.Context(), desired)
		if err != nil {
			return err
		}
		if err := client.Apply(t.Context(), plans); err != nil {
			return err
		}
		again, err := client.Plan(t.Context(), desired)
		if err != nil {
			return err
		}
		for _, p := range again {
			if !p.Changes.Empty() {
				t.Errorf("%s: plan after apply has changes: %s", p.Family, p.Changes.Summary())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("apply rendered nftables rules: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if _, err := exec.LookPath("nft"); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, _ := lab.Node().Run(ctx, "nft", "list", "ruleset")
		t.Logf("nft list ruleset in the node after the failure:\n%s", out)
	})
}
