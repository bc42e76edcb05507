package render_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// TestNFTablesMatchesKubeProxy renders each reference scenario in both
// families and compares it with what the real kube-proxy v1.37.2 programmed
// in nftables mode (`nft list ruleset`), after sorting set elements: table
// and chain comments, set declarations, chain order and rule text must be
// identical.
func TestNFTablesMatchesKubeProxy(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "reference", "*", "nftables.rules"))
	if len(dirs) < 3 {
		t.Fatalf("found %d reference nftables dumps, want at least 3", len(dirs))
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := nft.ParseAll(data)
			if err != nil {
				t.Fatal(err)
			}
			input, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			snap, err := cluster.Decode("scenario.yaml", input)
			if err != nil {
				t.Fatal(err)
			}
			tables, _, err := cluster.Build(snap, cluster.Config{
				NodeName:     "node1",
				ServiceCIDRs: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")},
			})
			if err != nil {
				t.Fatal(err)
			}
			cfg := referenceConfig()
			got := []*nft.Ruleset{
				render.NFTables(tables.IPv4, cfg),
				render.NFTables(tables.IPv6, cfg),
			}
			if len(want) != len(got) {
				t.Fatalf("kube-proxy listed %d tables, rendered %d", len(want), len(got))
			}
			for i := range want {
				want[i].SortElements()
				if !want[i].Equal(got[i]) {
					t.Errorf("table %s differs from kube-proxy (-kube-proxy +rendered):\n%s",
						want[i].Family, cmp.Diff(want[i].String(), got[i].String()))
				}
			}
		})
	}
}
