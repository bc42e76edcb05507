package nftables

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// span is an inclusive range of addresses.
type span struct{ lo, hi netip.Addr }

// parseSpans reads addresses, prefixes and "a-b" ranges of one address
// type and merges overlapping and adjacent ones, as nft's auto-merge does
// for anonymous sets (the kernel refuses overlapping intervals).
func parseSpans(items []string, t *dataType) ([]span, error) {
	if t != typeIPv4 && t != typeIPv6 {
		return nil, fmt.Errorf("interval elements of type %s are not supported", t.name)
	}
	spans := make([]span, 0, len(items))
	for _, it := range items {
		sp, err := parseSpan(it)
		if err != nil {
			return nil, err
		}
		if sp.lo.BitLen() != t.len*8 || sp.hi.BitLen() != t.len*8 {
			return nil, fmt.Errorf("%q is not of type %s", it, t.name)
		}
		spans = append(spans, sp)
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo.Compare(b.lo) })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 {
			last := &merged[n-1]
			next := last.hi.Next()
			if sp.lo.Compare(last.hi) <= 0 || (next.IsValid() && sp.lo == next) {
				if sp.hi.Compare(last.hi) > 0 {
					last.hi = sp.hi
				}
				continue
			}
		}
		merged = append(merged, sp)
	}
	return merged, nil
}

func parseSpan(s string) (span, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(lo)
		b, err2 := netip.ParseAddr(hi)
		if err1 != nil || err2 != nil || a.BitLen() != b.BitLen() || b.Less(a) {
			return span{}, fmt.Errorf("bad range %q", s)
		}
		return span{a, b}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return span{}, fmt.Errorf("bad prefix %q", s)
		}
		p = p.Masked()
		return span{p.Addr(), lastAddr(p)}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return span{}, fmt.Errorf("bad address %q", s)
	}
	return span{a, a}, nil
}

// lastAddr is the highest address of the masked prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// intervalElements encodes spans as nft does: a start element per span and
// an end element (flagged) at the address after it, unless the span runs
// to the last address; and, when the first span does not start at zero, an
// end element at zero first.
func intervalElements(spans []span) []rawElem {
	var out []rawElem
	for i, sp := range spans {
		if i == 0 && !sp.lo.IsUnspecified() {
			out = append(out, rawElem{key: make([]byte, sp.lo.BitLen()/8), end: true})
		}
		out = append(out, rawElem{key: sp.lo.AsSlice()})
		if next := sp.hi.Next(); next.IsValid() {
			out = append(out, rawElem{key: next.AsSlice(), end: true})
		}
	}
	return out
}

// intervalSpans folds interval elements, in any order, back into spans.
func intervalSpans(raws []rawElem) []span {
	sorted := slices.Clone(raws)
	slices.SortStableFunc(sorted, func(a, b rawElem) int { return bytes.Compare(a.key, b.key) })
	var out []span
	for i, r := range sorted {
		if r.end {
			continue
		}
		lo, ok := netip.AddrFromSlice(r.key)
		if !ok {
			continue
		}
		hi := allOnes(lo)
		if i+1 < len(sorted) && sorted[i+1].end {
			end, _ := netip.AddrFromSlice(sorted[i+1].key)
			hi = end.Prev()
		}
		out = append(out, span{lo, hi})
	}
	return out
}

func allOnes(a netip.Addr) netip.Addr {
	return lastAddr(netip.PrefixFrom(a, 0))
}

// formatSpan prints a span as nft lists an interval set's element: a
// single address bare, a span that is a prefix as a prefix, any other as
// "a-b".
func formatSpan(sp span) string {
	if sp.lo == sp.hi {
		return sp.lo.String()
	}
	for bits := 0; bits < sp.lo.BitLen(); bits++ {
		p := netip.PrefixFrom(sp.lo, bits)
		if p.Masked().Addr() == sp.lo && lastAddr(p) == sp.hi {
			return p.String()
		}
	}
	return sp.lo.String() + "-" + sp.hi.String()
}
