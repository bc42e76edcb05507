package render_test

import (
	"bytes"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// nftKernelRoundTrip loads rs's script (its listing text behind a
// replace-the-table preamble) with `nft -f -` into a fresh network
// namespace that lives only as long as the command, and returns what
// `nft list table` then prints, parsed.
func nftKernelRoundTrip(t *testing.T, rs *nft.Ruleset) *nft.Ruleset {
	t.Helper()
	script := "nft -f - && nft list table " + string(rs.Family) + " " + rs.Table
	cmd := exec.Command("unshare", "--net", "sh", "-c", script)
	cmd.Stdin = strings.NewReader(rs.Script())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, stderr.String())
	}
	got, err := nft.Parse(out)
	if err != nil {
		t.Fatalf("parse nft's listing: %v\n%s", err, out)
	}
	return got
}

// assertNFTKernelHolds checks that the kernel lists exactly the render,
// once both have their set elements in canonical order.
func assertNFTKernelHolds(t *testing.T, rendered, listed *nft.Ruleset) {
	t.Helper()
	listed.SortElements()
	if !rendered.Equal(listed) {
		t.Errorf("%s: the kernel lists the table differently (-rendered +kernel):\n%s",
			rendered.Family, cmp.Diff(rendered.String(), listed.String()))
	}
}

// TestGoldenNFTablesKernelRoundTrip loads every golden case's nftables
// render into the real kernel, as the script EncodeScript writes, and checks
// that `nft list table` gives back the same table.
func TestGoldenNFTablesKernelRoundTrip(t *testing.T) {
	requireRoot(t, "nft")
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.Name, func(t *testing.T) {
			sets, _ := gc.renderNFTables(t, gc.Input)
			for _, rs := range sets {
				assertNFTKernelHolds(t, rs, nftKernelRoundTrip(t, rs))
			}
		})
	}
}

// TestNFTablesKernelRoundTripLarge does the same for 300 Services with 10
// endpoints each, some with session affinity, external IPs, load balancers
// with source ranges and no endpoints, so that large element lists (and
// nft's line wrapping of them) meet the kernel's hash order.
func TestNFTablesKernelRoundTripLarge(t *testing.T) {
	requireRoot(t, "nft")
	table := synthetic.VariedTable(300, 10)
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	rs := render.NFTables(table, cfg)
	if err := rs.Validate(); err != nil {
		t.Fatal(err)
	}
	assertNFTKernelHolds(t, rs, nftKernelRoundTrip(t, rs))
}
