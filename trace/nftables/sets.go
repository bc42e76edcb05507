package nftables

import (
	"net/netip"
	"strconv"
	"strings"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// set is a named or anonymous set or map, indexed for lookups: exact keys
// in a hash, interval elements (prefixes, ranges) in a list.
type set struct {
	name      string
	exact     map[string]string
	intervals []interval
	// affinity is the element timeout in seconds of a dynamic set with
	// timeouts (kube-proxy's affinity sets), 0 otherwise.
	affinity int
}

type interval struct {
	parts []part
	value string
}

// part is one part of an interval element's key.
type part struct {
	prefix netip.Prefix
	lo, hi netip.Addr
	plo    uint64
	phi    uint64
	isPort bool
	exact  string
}

func newSet(name string) *set { return &set{name: name, exact: map[string]string{}} }

func indexSet(s *nft.Set) *set {
	out := newSet(s.Name)
	if s.Timeout > 0 && hasFlag(s, nft.FlagDynamic) {
		out.affinity = int(s.Timeout.Seconds())
	}
	for _, e := range s.Elements {
		out.add(e.Key, e.Value)
	}
	return out
}

func hasFlag(s *nft.Set, f nft.SetFlag) bool {
	for _, x := range s.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// add adds an element: key parts joined by " . ", each maybe followed by
// the "timeout 3h expires 2h59m" a dynamic set's listing carries.
func (s *set) add(key, value string) {
	raw := strings.Split(key, " . ")
	norm := make([]string, len(raw))
	var iv interval
	isInterval := false
	for i, r := range raw {
		f := strings.Fields(r)
		if len(f) == 0 {
			return
		}
		p := parsePart(f[0])
		iv.parts = append(iv.parts, p)
		isInterval = isInterval || p.exact == ""
		norm[i] = p.exact
	}
	if isInterval {
		iv.value = value
		s.intervals = append(s.intervals, iv)
		return
	}
	s.exact[strings.Join(norm, " . ")] = value
}

func parsePart(w string) part {
	if p, err := netip.ParsePrefix(w); err == nil {
		return part{prefix: p.Masked()}
	}
	if lo, hi, ok := strings.Cut(w, "-"); ok {
		if a, err := netip.ParseAddr(lo); err == nil {
			if b, err := netip.ParseAddr(hi); err == nil {
				return part{lo: a, hi: b}
			}
		}
		if a, err := strconv.ParseUint(lo, 10, 16); err == nil {
			if b, err := strconv.ParseUint(hi, 10, 16); err == nil {
				return part{isPort: true, plo: a, phi: b}
			}
		}
	}
	return part{exact: normWord(w)}
}

// normWord spells addresses canonically so that keys compare as text.
func normWord(w string) string {
	if a, err := netip.ParseAddr(w); err == nil {
		return a.Unmap().String()
	}
	return w
}

func (p *part) matches(v string) bool {
	switch {
	case p.exact != "":
		return p.exact == v
	case p.prefix.IsValid():
		a, err := netip.ParseAddr(v)
		return err == nil && p.prefix.Contains(a)
	case p.isPort:
		n, err := strconv.ParseUint(v, 10, 16)
		return err == nil && n >= p.plo && n <= p.phi
	}
	a, err := netip.ParseAddr(v)
	return err == nil && a.Compare(p.lo) >= 0 && a.Compare(p.hi) <= 0
}

// lookup finds the element matching the key parts and returns its value.
func (s *set) lookup(key []string) (string, bool) {
	if v, ok := s.exact[strings.Join(key, " . ")]; ok {
		return v, true
	}
	for _, iv := range s.intervals {
		if len(iv.parts) != len(key) {
			continue
		}
		ok := true
		for i := range key {
			if !iv.parts[i].matches(key[i]) {
				ok = false
				break
			}
		}
		if ok {
			return iv.value, true
		}
	}
	return "", false
}
