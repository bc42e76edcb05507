package nftables_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// BenchmarkParseListing parses a rendered table's listing (what `nft list
// table` prints) at 1k and 10k Services x 10 endpoints. It was quadratic
// in the number of map elements once; it must grow linearly.
func BenchmarkParseListing(b *testing.B) {
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		var buf bytes.Buffer
		if err := render.NFTables(synthetic.Table(n, 10), render.DefaultConfig()).Encode(&buf); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, err := nft.Parse(buf.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
