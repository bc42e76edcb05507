package traffic_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/traffic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// TestNFTablesTraffic runs the same scenarios as the iptables modes with the
// nftables render loaded by nft -f into each lab's node.
func TestNFTablesTraffic(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kernel test: needs root to create network namespaces (CI runs it as root)")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("kernel test: nft not installed (hack/install-deps.sh installs it)")
	}
	for _, sc := range traffic.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			traffic.Run(t, sc, traffic.Mode{Name: "nftables", Load: nftablesLoader})
		})
	}
}

// nftablesLoader renders node1's nftables ruleset for each family with
// Service ports and loads it with nft -f into the lab's node.
func nftablesLoader(t *testing.T, lab *netlab.Lab, snap *cluster.Snapshot) {
	t.Helper()
	cfg := labConfig()
	for _, table := range usedTables(t, snap) {
		script := render.NFTables(table, cfg).Script()
		if _, err := lab.Node().RunInput(t.Context(), []byte(script), "nft", "-f", "-"); err != nil {
			t.Fatalf("load rendered %s rules: %v\n%s", table.Family, err, script)
		}
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, _ := lab.Node().Run(ctx, "nft", "list", "ruleset")
		t.Logf("nft list ruleset in the node after the failure:\n%s", out)
	})
}
