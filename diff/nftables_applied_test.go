package diff

import (
	"math/rand/v2"
	"testing"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// withPacketPathElements gives every dynamic set of rs an element, as the
// packet path would, and says whether there was one.
func withPacketPathElements(rs *nft.Ruleset) bool {
	found := false
	for _, s := range rs.Sets {
		if IsDynamic(s) {
			s.Elements = []nft.Element{{Key: "10.0.0.7 timeout 3h expires 2h59m"}}
			found = true
		}
	}
	return found
}

// TestAppliedNFTablesIsReplay checks that the state built from the render
// is the state replayed from the live table, for every kind of change:
// incremental, new, rebuilt and deleted tables, with and without the
// packet path's elements in the affinity sets.
func TestAppliedNFTablesIsReplay(t *testing.T) {
	base := nftTable(40)
	desired := nftRender(base)
	type pair struct {
		name          string
		desired, live *nft.Ruleset
	}
	pairs := []pair{{"new table", desired, nil}}
	for _, d := range drifts {
		live := cloneNFT(t, desired)
		d.edit(live)
		pairs = append(pairs, pair{d.name, desired, live})
	}
	comment := cloneNFT(t, desired)
	comment.Comment = "other"
	pairs = append(pairs,
		pair{"table comment (rebuilt)", desired, comment},
		pair{"one endpoint", nftRender(synthetic.WithOneEndpointChanged(base, 24, 1)), shuffled(t, desired, rand.New(rand.NewPCG(1, 2)))},
		pair{"service deleted", nftRender(nftTable(39)), cloneNFT(t, desired)},
		pair{"service added", nftRender(nftTable(41)), cloneNFT(t, desired)},
		pair{"nothing changes", desired, cloneNFT(t, desired)},
	)
	for _, p := range pairs {
		if p.live != nil && !withPacketPathElements(p.live) {
			t.Fatalf("%s: the live table has no affinity set", p.name)
		}
		cs := NFTables(p.desired, p.live)
		want := canonical(ReplayNFTables(p.live, cs))
		if got := canonical(AppliedNFTables(p.desired, p.live, cs)); got != want {
			t.Errorf("%s: the state built from the render is\n%s\nthe replayed one\n%s", p.name, got, want)
		}
	}
	if got := AppliedNFTables(desired, desired, DeleteNFTables(desired)); got != nil {
		t.Errorf("a deleted table leaves %s", got)
	}
}
