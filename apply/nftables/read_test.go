package nftables

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// listTable is what the real nft lists for the table, parsed and with its
// elements in canonical order; nil when nft lists nothing. A listing torn
// by a resize of a hash set (see nft.Ruleset.HasRepeatedElements) is taken
// again.
func (ns *testNS) listTable(family nft.Family, table string) *nft.Ruleset {
	ns.t.Helper()
	for attempt := 1; ; attempt++ {
		out := ns.mustNFT("", "list", "table", string(family), table)
		rs, err := nft.Parse([]byte(out))
		if err != nil {
			ns.t.Fatalf("parse nft's listing: %v\n%s", err, out)
		}
		if !rs.HasRepeatedElements() || attempt == 20 {
			rs.SortElements()
			return rs
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

func assertSameTable(t testing.TB, what string, want, got *nft.Ruleset) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no table", what)
		return
	}
	if !want.Equal(got) {
		t.Errorf("%s differs (-rendered +got):\n%s", what, cmp.Diff(want.String(), got.String()))
	}
}

// TestAgreementWithNFT writes every golden case's tables and the tables
// real kube-proxy programmed through netlink into a fresh namespace, and
// checks three readers against the rendered value: the real `nft list
// table` (so the netlink encoding says what the script says), ReadTable
// (the round trip), and ReadTable after the rendered script was loaded
// by `nft -f` (so the decoder reads what nft writes).
func TestAgreementWithNFT(t *testing.T) {
	for _, tc := range tableCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			ns := newTestNS(t)
			c := ns.open()
			want := tc.rs
			if err := writeTable(c, want); err != nil {
				t.Fatal(err)
			}
			assertSameTable(t, "nft list table after writeTable", want, ns.listTable(want.Family, want.Table))
			got, err := c.ReadTable(want.Family, want.Table)
			if err != nil {
				t.Fatal(err)
			}
			assertSameTable(t, "ReadTable after writeTable", want, got)

			ns.mustNFT(want.Script(), "-f", "-")
			got, err = c.ReadTable(want.Family, want.Table)
			if err != nil {
				t.Fatal(err)
			}
			assertSameTable(t, "ReadTable after nft -f", want, got)
		})
	}
}

// TestAgreementWithNFTLarge does the same for 300 Services with 10
// endpoints each, some with session affinity, external IPs, load
// balancers with source ranges and no endpoints: numgen maps of ten,
// elements in hash order, and nft's line wrapping of long element lists.
func TestAgreementWithNFTLarge(t *testing.T) {
	table := synthetic.VariedTable(300, 10)
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	want := render.NFTables(table, cfg)

	ns := newTestNS(t)
	c := ns.open()
	must(t, writeTable(c, want))
	assertSameTable(t, "nft list table after writeTable", want, ns.listTable(want.Family, want.Table))
	assertSameTable(t, "ReadTable after writeTable", want, mustRead(t, c, want.Family, want.Table))
	ns.mustNFT(want.Script(), "-f", "-")
	assertSameTable(t, "ReadTable after nft -f", want, mustRead(t, c, want.Family, want.Table))
}
