package nftables

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// SortElements puts the elements of every set and map into the package's
// canonical order, the order renders use. It is the one normalisation a
// kernel listing needs before it is compared with a render: the kernel
// lists hash-set elements in hash order.
//
// The order compares keys part by part (the parts of a concatenation are
// separated by " . "): numbers numerically, then addresses and prefixes by
// address (IPv4 before IPv6) and then prefix length, then any other word
// (protocol names, verdicts) as a string. Elements with equal keys keep
// their relative order (a whole kernel listing never has two; see
// HasRepeatedElements).
func (rs *Ruleset) SortElements() {
	for _, s := range rs.Sets {
		s.SortElements()
	}
}

// SortElements puts s's elements into canonical order (see Ruleset.SortElements).
// Elements with equal keys keep their order. It sorts indices, not the
// elements, and breaks ties by index: a stable sort of the elements
// themselves moved 72-byte values about n log² n times, the largest part
// of rendering a 10k-Service table.
func (s *Set) SortElements() {
	n := len(s.Elements)
	if n < 2 {
		return
	}
	keys := make([][]byte, n)
	buf := make([]byte, 0, 32*n)
	for i, e := range s.Elements {
		start := len(buf)
		buf = appendSortKey(buf, e.Key)
		keys[i] = buf[start:len(buf):len(buf)]
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		return cmp.Or(bytes.Compare(keys[a], keys[b]), cmp.Compare(a, b))
	})
	sorted := make([]Element, n)
	for i, j := range idx {
		sorted[i] = s.Elements[j]
	}
	copy(s.Elements, sorted)
}

// HasRepeatedElements reports whether some set lists one key twice. A set
// never holds a key twice, but a dump of a large hash set that the kernel
// resizes while it is read repeats some elements and leaves out as many
// others; readers of kernel listings take such a torn listing again.
func (rs *Ruleset) HasRepeatedElements() bool {
	for _, s := range rs.Sets {
		seen := make(map[string]struct{}, len(s.Elements))
		for _, e := range s.Elements {
			if _, dup := seen[e.Key]; dup {
				return true
			}
			seen[e.Key] = struct{}{}
		}
	}
	return false
}

// Sort-key kinds, in their order.
const (
	kindNumber byte = 1
	kindAddr   byte = 2
	kindWord   byte = 3
)

// appendSortKey appends a byte string that sorts as the key sorts.
func appendSortKey(dst []byte, key string) []byte {
	for part := range strings.SplitSeq(key, " . ") {
		dst = appendPartKey(dst, part)
	}
	return dst
}

// appendPartKey appends the key of one part: a number, an address or
// prefix, or a word. It tries a parser only on a part that can be of its
// kind: a failed parse allocates its error, and sorting the elements of a
// 10k-Service table tried some 100k of them.
func appendPartKey(dst []byte, part string) []byte {
	if part != "" && strings.Trim(part, "0123456789") == "" {
		if n, err := strconv.ParseUint(part, 10, 64); err == nil {
			dst = append(dst, kindNumber)
			return binary.BigEndian.AppendUint64(dst, n)
		}
	}
	addr, bits := netip.Addr{}, -1
	if strings.ContainsAny(part, ".:") {
		if a, err := netip.ParseAddr(part); err == nil {
			addr, bits = a, a.BitLen()
		} else if p, err := netip.ParsePrefix(part); err == nil {
			addr, bits = p.Addr(), p.Bits()
		}
	}
	if addr.IsValid() {
		dst = append(dst, kindAddr, byte(addr.BitLen()))
		b := addr.As16()
		return append(append(dst, b[:]...), byte(bits))
	}
	// Words end with 0 so that a word sorts before its own extensions.
	dst = append(dst, kindWord)
	dst = append(dst, part...)
	return append(dst, 0)
}
