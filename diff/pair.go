package diff

import nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"

// pairByName calls each(d, l) for every item of desired with the item of
// live that has its name (nil when live has none), in desired's order,
// and returns the items of live that no desired item names, in live's
// order. Names are unique on each side, as in a table.
//
// When live is the state an earlier apply left, it lists its sets and
// chains in the order of the render it came from, and a render of the
// next sync keeps that order: the two lists run side by side, and an
// index by name is built only from the first place where they part (a
// Service added or deleted), so an endpoint change costs no map of the
// table.
func pairByName[T *nft.Set | *nft.Chain](desired, live []T, name func(T) string, each func(d, l T)) (unpaired []T) {
	i := 0
	for ; i < len(desired) && i < len(live) && name(desired[i]) == name(live[i]); i++ {
		each(desired[i], live[i])
	}
	if i == len(desired) {
		return live[i:]
	}
	rest := make(map[string]T, len(live)-i)
	for _, l := range live[i:] {
		rest[name(l)] = l
	}
	for _, d := range desired[i:] {
		l := rest[name(d)]
		delete(rest, name(d))
		each(d, l)
	}
	for _, l := range live[i:] {
		if _, left := rest[name(l)]; left {
			unpaired = append(unpaired, l)
		}
	}
	return unpaired
}

func setName(s *nft.Set) string     { return s.Name }
func chainName(c *nft.Chain) string { return c.Name }
