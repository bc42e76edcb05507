package netlab

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
)

// Generation returns the nf_tables generation ID of the namespace.
func (n NS) Generation(t testing.TB) uint32 {
	t.Helper()
	var g uint32
	if err := n.Do(func() (err error) { g, err = nftgen.Read(); return err }); err != nil {
		t.Fatal(err)
	}
	return g
}

// EqualGenerations commits empty tables in whichever of a and b has the
// lower nf_tables generation until both are at the same one, and reports
// whether a's moved. Tests use it to make two namespaces look alike to a
// cache keyed by the generation alone.
func EqualGenerations(t testing.TB, a, b NS) (aMoved bool) {
	t.Helper()
	for i := 0; ; i++ {
		ga, gb := a.Generation(t), b.Generation(t)
		switch {
		case ga == gb:
			return aMoved
		case i > 1000:
			t.Fatalf("generations %d and %d do not meet", ga, gb)
		case ga < gb:
			commitEmptyTable(t, a, i)
			aMoved = true
		default:
			commitEmptyTable(t, b, i)
		}
	}
}

func commitEmptyTable(t testing.TB, ns NS, i int) {
	t.Helper()
	if out, err := ns.Run(context.Background(), "nft", "add", "table", "ip", fmt.Sprintf("bump%d", i)); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
}
