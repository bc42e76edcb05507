package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// TestPairByNameMatchesEveryName checks pairByName against the plain
// index by name, on lists that agree, then part where items are added,
// dropped and moved.
func TestPairByNameMatchesEveryName(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 18))
	for round := range 500 {
		live := chainList(r.IntN(12), "c")
		desired := slices.Clone(live)
		for range r.IntN(4) {
			switch i := r.IntN(len(desired) + 1); r.IntN(3) {
			case 0:
				desired = slices.Insert(desired, i, &nft.Chain{Name: fmt.Sprintf("new%d", r.IntN(1000))})
			case 1:
				if i < len(desired) {
					desired = slices.Delete(desired, i, i+1)
				}
			case 2:
				r.Shuffle(len(desired), func(a, b int) { desired[a], desired[b] = desired[b], desired[a] })
			}
		}
		desired = uniqueNames(desired)
		var got [][2]*nft.Chain
		gone := pairByName(desired, live, chainName, func(d, l *nft.Chain) { got = append(got, [2]*nft.Chain{d, l}) })
		want, wantGone := pairsByIndex(desired, live)
		if !slices.Equal(got, want) || !slices.Equal(gone, wantGone) {
			t.Fatalf("round %d: desired %v live %v:\npairs %v, unpaired %v\nwant %v, %v",
				round, names(desired), names(live), got, names(gone), want, names(wantGone))
		}
	}
}

func chainList(n int, prefix string) []*nft.Chain {
	out := make([]*nft.Chain, n)
	for i := range out {
		out[i] = &nft.Chain{Name: fmt.Sprintf("%s%d", prefix, i)}
	}
	return out
}

func uniqueNames(cs []*nft.Chain) []*nft.Chain {
	seen := map[string]bool{}
	return slices.DeleteFunc(cs, func(c *nft.Chain) bool {
		dup := seen[c.Name]
		seen[c.Name] = true
		return dup
	})
}

// pairsByIndex is what pairByName must return, the long way.
func pairsByIndex(desired, live []*nft.Chain) (pairs [][2]*nft.Chain, gone []*nft.Chain) {
	byName := map[string]*nft.Chain{}
	for _, l := range live {
		byName[l.Name] = l
	}
	named := map[string]bool{}
	for _, d := range desired {
		pairs = append(pairs, [2]*nft.Chain{d, byName[d.Name]})
		named[d.Name] = true
	}
	for _, l := range live {
		if !named[l.Name] {
			gone = append(gone, l)
		}
	}
	return pairs, gone
}

func names(cs []*nft.Chain) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
