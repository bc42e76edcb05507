package iptablesnft

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
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
			v = attr(unix.NFTA_DATA_VALUE, randomBytes(r, r.IntN(20)))
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
	var e nfnl.Encoder
	e.Put(typ, v)
	return e.Buf
}

// kubeRule is what iptables-nft writes for "-A C -d 10.96.0.1/32 -p tcp
// -m tcp --dport 80 -m mark --mark 0x4000/0x4000 -j KUBE-SEP-X", counter
// included, expression by expression.
func kubeRule() []nftables.RawExpr {
	expr := func(name string, put func(e *nfnl.Encoder)) nftables.RawExpr {
		var e nfnl.Encoder
		put(&e)
		return nftables.RawExpr{Name: name, Data: e.Buf}
	}
	load := func(base, offset, n uint32) nftables.RawExpr {
		return expr("payload", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_PAYLOAD_DREG, unix.NFT_REG_1)
			e.PutU32(unix.NFTA_PAYLOAD_BASE, base)
			e.PutU32(unix.NFTA_PAYLOAD_OFFSET, offset)
			e.PutU32(unix.NFTA_PAYLOAD_LEN, n)
		})
	}
	data := func(e *nfnl.Encoder, typ uint16, v []byte) {
		d := e.Nested(typ)
		e.Put(unix.NFTA_DATA_VALUE, v)
		e.End(d)
	}
	cmp := func(v []byte) nftables.RawExpr {
		return expr("cmp", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_CMP_SREG, unix.NFT_REG_1)
			e.PutU32(unix.NFTA_CMP_OP, unix.NFT_CMP_EQ)
			data(e, unix.NFTA_CMP_DATA, v)
		})
	}
	mark := binary.NativeEndian.AppendUint32(nil, 0x4000)
	return []nftables.RawExpr{
		load(unix.NFT_PAYLOAD_NETWORK_HEADER, 16, 4), cmp([]byte{10, 96, 0, 1}),
		expr("meta", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_META_KEY, unix.NFT_META_L4PROTO)
			e.PutU32(unix.NFTA_META_DREG, unix.NFT_REG_1)
		}), cmp([]byte{unix.IPPROTO_TCP}),
		load(unix.NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2), cmp([]byte{0, 80}),
		expr("meta", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_META_KEY, unix.NFT_META_MARK)
			e.PutU32(unix.NFTA_META_DREG, unix.NFT_REG_1)
		}),
		expr("bitwise", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_BITWISE_SREG, unix.NFT_REG_1)
			e.PutU32(unix.NFTA_BITWISE_DREG, unix.NFT_REG_1)
			e.PutU32(unix.NFTA_BITWISE_LEN, 4)
			data(e, unix.NFTA_BITWISE_MASK, mark)
			data(e, unix.NFTA_BITWISE_XOR, make([]byte, 4))
			e.PutU32(nfnl.NFTA_BITWISE_OP, unix.NFT_BITWISE_BOOL)
		}), cmp(mark),
		{Name: "counter"},
		expr("immediate", func(e *nfnl.Encoder) {
			e.PutU32(unix.NFTA_IMMEDIATE_DREG, unix.NFT_REG_VERDICT)
			d := e.Nested(unix.NFTA_IMMEDIATE_DATA)
			v := e.Nested(unix.NFTA_DATA_VERDICT)
			e.PutU32(unix.NFTA_VERDICT_CODE, uint32(0xfffffffd)) // NFT_JUMP
			e.PutString(unix.NFTA_VERDICT_CHAIN, "KUBE-SEP-X")
			e.End(v)
			e.End(d)
		}),
	}
}

const kubeRuleText = "-A C -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -m mark --mark 0x4000/0x4000 -j KUBE-SEP-X\n"

// TestNativeRule reads a rule of native expressions, each attribute
// numbered as the kernel numbers it.
func TestNativeRule(t *testing.T) {
	got, err := appendRule(nil, ipv4, "C", kubeRule())
	if err != nil || string(got) != kubeRuleText {
		t.Errorf("read %q, %v; want %q", got, err, kubeRuleText)
	}
}

// A torn expression never reads as another rule: every cut of every
// expression's attributes is an error, or (for a cut that only drops an
// attribute the rule can do without) the same rule.
func TestTornExpressions(t *testing.T) {
	rule := kubeRule()
	for i, e := range rule {
		for k := range len(e.Data) {
			torn := slices.Clone(rule)
			torn[i].Data = e.Data[:k]
			if got, err := appendRule(nil, ipv4, "C", torn); err == nil && string(got) != kubeRuleText {
				t.Errorf("%s cut at %d of %d bytes read as %q", e.Name, k, len(e.Data), got)
			}
		}
	}
}
