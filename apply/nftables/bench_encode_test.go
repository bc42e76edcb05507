package nftables

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// syntheticRuleset renders n synthetic Services of ten endpoints in
// layout.
func syntheticRuleset(n int, layout string) *nft.Ruleset {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	cfg.NFTablesLayout = layout
	return render.NFTables(synthetic.Table(n, 10), cfg)
}

// createTransaction is the transaction that writes desired into a node
// without the table.
func createTransaction(desired *nft.Ruleset) transaction {
	return transactions(&Plan{Family: desired.Family, Desired: desired, Changes: diff.NFTables(desired, nil)})[0]
}

// BenchmarkEncodeNewTable measures the tool's own part of writing a new
// table, without the kernel: planning the ops and encoding them into one
// netlink batch (compiling every rule), as Apply does before it sends.
// BenchmarkLayout's from-empty case adds the kernel's part and the
// memory it touches for the first time.
func BenchmarkEncodeNewTable(b *testing.B) {
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		for _, layout := range []string{render.NFTablesLayoutKubeProxy, render.NFTablesLayoutCompact} {
			desired := syntheticRuleset(n, layout)
			b.Run(fmt.Sprintf("services=%d/layout=%s", n, layout), func(b *testing.B) {
				var bytes int
				for b.Loop() {
					tx := createTransaction(desired)
					batch := (&Conn{}).NewBatch(tx.family, tx.table)
					batch.Grow(estimateBatchBytes(tx.ops))
					if err := queueOps(batch, tx.ops); err != nil {
						b.Fatal(err)
					}
					bytes = len(batch.enc.Buf)
					batch.Release()
				}
				b.ReportMetric(float64(bytes)/1e6, "MB")
			})
		}
	}
}
