package iptablesnft

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
)

// TestShortStructuresAreUnknown: every extension refuses a structure
// shorter than its own, as the kernel never sends one, rather than read
// past it.
func TestShortStructuresAreUnknown(t *testing.T) {
	sizes := map[string]int{"comment": 256, "conntrack": ctSize, "addrtype": 8, "statistic": 8, "recent": 228,
		"nfacct": 32, "mark": 9, "tcp": 12, "udp": 9, "sctp": 292, "physdev": 66,
		"MARK": 8, "MASQUERADE": 20, "REDIRECT": 20, "DNAT": 42, "REJECT": 4}
	all := map[xtKey]xtFormat{}
	for k, f := range matches {
		all[k] = f
	}
	for k, f := range targets {
		all[k] = f
	}
	for k, f := range all {
		size, ok := sizes[k.name]
		if !ok {
			t.Fatalf("no size for %s", k.name)
		}
		for _, fam := range []family{ipv4, ipv6} {
			need := size
			if fam.v6 && (k.name == "MASQUERADE" || k.name == "REDIRECT") {
				need = 40
			}
			for n := range need {
				if _, err := f(make([]byte, n), fam); !errors.Is(err, ErrUnknown) {
					t.Errorf("%s with %d of %d bytes: %v, want ErrUnknown", k.name, n, need, err)
				}
			}
		}
	}
}

// TestGarbageNeverPanics feeds appendRule expressions of every kind the
// reader looks at, with random attributes, and checks that it returns a
// rule or an error.
func TestGarbageNeverPanics(t *testing.T) {
	names := []string{"payload", "meta", "bitwise", "cmp", "immediate", "counter", "match", "target", "lookup"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		exprs := make([]nftables.RawExpr, 1+r.IntN(5))
		for i := range exprs {
			exprs[i] = nftables.RawExpr{Name: names[r.IntN(len(names))], Data: randomAttrs(r)}
		}
		out, err := appendRule(nil, []family{ipv4, ipv6}[r.IntN(2)], "C", exprs)
		if err == nil && (len(out) == 0 || out[len(out)-1] != '\n') {
			t.Fatalf("rule %q without error", out)
		}
	}
}

// randomAttrs is up to four attributes of types 1 to 7, each a short
// value, a u32, or a nested NFTA_DATA_VALUE.
func randomAttrs(r *rand.Rand) []byte {
	var b []byte
	for range r.IntN(5) {
		var v []byte
		switch r.IntN(3) {
		case 0:
			v = binary.BigEndian.AppendUint32(nil, uint32(r.IntN(40)))
		case 1:
			v = attr(attrDataValue, randomBytes(r, r.IntN(20)))
		default:
			v = randomBytes(r, r.IntN(300))
		}
		b = append(b, attr(uint16(1+r.IntN(7)), v)...)
	}
	return b
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

func attr(typ uint16, v []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
