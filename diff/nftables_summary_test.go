package diff

import (
	"strings"
	"testing"
	"time"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// TestNFTablesSummaryCountsSets: a set in the tool's table that the
// desired table lacks (a foreign one, added by hand) is deleted, and the
// summary says so even when it holds no element; a redeclared set whose
// elements stay is counted as changed. A change set with changes never
// has an empty summary.
func TestNFTablesSummaryCountsSets(t *testing.T) {
	desired := nftRender(nftTable(5))
	live := cloneNFT(t, desired)
	live.Sets = append(live.Sets,
		&nft.Set{Name: "by-hand", Type: "ipv4_addr"},
		&nft.Set{Name: "by-hand-full", Type: "ipv4_addr", Elements: []nft.Element{{Key: "192.0.2.1"}, {Key: "192.0.2.2"}}})
	cs := NFTables(desired, live)
	want := Summary{SetsDeleted: 2, ElementsRemoved: 2}
	if got := cs.Summary(); got != want {
		t.Fatalf("summary %+v, want %+v", got, want)
	}
	if got, line := cs.Summary().String(), "sets +0 ~0 -2"; !strings.Contains(got, line) {
		t.Errorf("summary line %q lacks %q", got, line)
	}

	// Only the foreign, empty set: the plan has a change, so must the
	// summary.
	live = cloneNFT(t, desired)
	live.Sets = append(live.Sets, &nft.Set{Name: "by-hand", Type: "ipv4_addr"})
	if cs := NFTables(desired, live); cs.Empty() || cs.Summary().Empty() {
		t.Fatalf("an empty foreign set: change set empty %v, summary %+v", cs.Empty(), cs.Summary())
	}

	// A declaration that changes, with the same elements.
	live = cloneNFT(t, desired)
	live.Sets[0].Timeout = time.Hour
	if got, want := NFTables(desired, live).Summary(), (Summary{SetsChanged: 1}); got != want {
		t.Fatalf("a redeclared set: summary %+v, want %+v", got, want)
	}
}
