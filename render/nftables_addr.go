package render

import (
	"net/netip"
	"slices"
	"strings"
)

// nftAddr spells a prefix as nft lists it: masked, and a host prefix as a
// bare address.
func nftAddr(p netip.Prefix) string {
	p = p.Masked()
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().String()
	}
	return p.String()
}

// nftAnonymousAddrSet spells what nft lists for the anonymous set
// `{ p1, p2, ... }` that kube-proxy writes in a rule. One element becomes a
// plain value ("10.96.0.0/16"). Several make an interval set, which nft
// sorts and merges (overlapping or adjacent ranges become one), printing
// each range as a prefix or address where it is one and as "a-b" otherwise:
// "{ 1.2.3.4, 10.0.0.0/8, 192.168.0.0/23 }".
func nftAnonymousAddrSet(prefixes []netip.Prefix) string {
	if len(prefixes) == 1 {
		return nftAddr(prefixes[0])
	}
	type span struct{ lo, hi netip.Addr }
	spans := make([]span, 0, len(prefixes))
	for _, p := range prefixes {
		p = p.Masked()
		spans = append(spans, span{p.Addr(), lastAddr(p)})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo.Compare(b.lo) })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			if next := last.hi.Next(); sp.lo.Compare(last.hi) <= 0 || (next.IsValid() && sp.lo == next) {
				if sp.hi.Compare(last.hi) > 0 {
					last.hi = sp.hi
				}
				continue
			}
		}
		merged = append(merged, sp)
	}
	parts := make([]string, len(merged))
	for i, sp := range merged {
		parts[i] = spanString(sp.lo, sp.hi)
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// lastAddr is the highest address of p (which must be masked).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	off := 128 - p.Addr().BitLen()
	for i := off + p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// spanString prints the range lo-hi as nft does: as a prefix when it is one.
func spanString(lo, hi netip.Addr) string {
	for bits := 0; bits <= lo.BitLen(); bits++ {
		p := netip.PrefixFrom(lo, bits)
		if p.Masked().Addr() == lo && lastAddr(p) == hi {
			return nftAddr(p)
		}
	}
	return lo.String() + "-" + hi.String()
}
