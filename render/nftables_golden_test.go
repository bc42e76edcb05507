package render_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// renderNFTables renders every family of the case as `nft list ruleset` text.
func (gc *goldenCase) renderNFTables(t *testing.T, input []byte) ([]*nft.Ruleset, string) {
	t.Helper()
	tables := gc.tables(t, input)
	var sets []*nft.Ruleset
	for _, f := range gc.families() {
		sets = append(sets, render.NFTables(tables.ForFamily(f), gc.cfg.Config))
	}
	var b bytes.Buffer
	if err := nft.EncodeAll(&b, sets); err != nil {
		t.Fatal(err)
	}
	return sets, b.String()
}

// TestGoldenNFTables checks the "nftables" section of every golden case
// (rewritten with -update), that the render does not depend on input order,
// that it is valid nft text, and that text and JSON read back unchanged.
func TestGoldenNFTables(t *testing.T) {
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			sets, got := gc.renderNFTables(t, gc.input)
			gc.check(t, "nftables", got)

			if _, again := gc.renderNFTables(t, reverseDocuments(gc.input)); again != got {
				t.Errorf("rendering depends on input order:\n%s", cmp.Diff(got, again))
			}
			if _, again := gc.renderNFTables(t, gc.input); again != got {
				t.Errorf("rendering twice differs:\n%s", cmp.Diff(got, again))
			}
			for _, rs := range sets {
				if err := rs.Validate(); err != nil {
					t.Errorf("%s: %v", rs.Family, err)
				}
			}
			back, err := nft.ParseAll([]byte(got))
			if err != nil {
				t.Fatalf("parse rendered text: %v", err)
			}
			assertSameNFTRulesets(t, "text round trip", sets, back)
			data, err := json.Marshal(sets)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON []*nft.Ruleset
			if err := json.Unmarshal(data, &fromJSON); err != nil {
				t.Fatal(err)
			}
			assertSameNFTRulesets(t, "JSON round trip", sets, fromJSON)
		})
	}
}

func assertSameNFTRulesets(t *testing.T, what string, want, got []*nft.Ruleset) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d tables, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !want[i].Equal(got[i]) {
			t.Errorf("%s: table %d differs:\n%s", what, i, cmp.Diff(want[i].String(), got[i].String()))
		}
	}
}
