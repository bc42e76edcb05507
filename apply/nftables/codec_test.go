package nftables

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// wire sends compiled expressions through their netlink encoding and back,
// as a rule makes its way into the kernel and out of a dump.
func wire(t testing.TB, family byte, exprs []expr.Any) []expr.Any {
	t.Helper()
	out, err := unmarshalExprs(family, encodeExprs(t, family, exprs))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// offline decompiles a compiled rule without a kernel: anonymous sets get
// the names the batch would give them.
func offline(t testing.TB, family byte, cr *compiledRule, exprs []expr.Any) nft.Rule {
	t.Helper()
	anon := map[string]*anonSet{}
	for i, as := range cr.anon {
		name := "__set" + strconv.Itoa(i)
		as.lookup.SetName = name
		anon[name] = as
	}
	if exprs == nil {
		exprs = wire(t, family, cr.exprs)
	}
	return decompileRule(family, exprs, cr.udata, func(name string) (*setInfo, []rawElem, bool) {
		as, ok := anon[name]
		if !ok {
			return nil, nil, false
		}
		return &as.info, as.elems, true
	})
}

// TestRuleCodecRoundTrip compiles every rule of every golden case and
// reference dump, encodes and decodes its expressions, and decompiles them
// back to the same text.
func TestRuleCodecRoundTrip(t *testing.T) {
	shapes := map[string]bool{}
	eachCompiledRule(t, func(tc tableCase, fam byte, r nft.Rule, cr *compiledRule) {
		if got := offline(t, fam, cr, nil); got != r {
			t.Errorf("%s: round trip:\n got %q\nwant %q", tc.name, got, r)
		}
		shapes[shapeOf(string(r))] = true
	})
	t.Logf("%d rule shapes round-tripped", len(shapes))
}

// shapeOf blurs names and numbers out of a rule, to count its shapes.
func shapeOf(r string) string {
	var b strings.Builder
	for _, w := range strings.Fields(r) {
		if strings.ContainsAny(w, "0123456789@\"/") {
			w = "X"
		}
		b.WriteString(w + " ")
	}
	return b.String()
}

// TestDecompileDamagedRules removes each expression of each rule in turn:
// the decompiler must not panic, and must not print the original text.
func TestDecompileDamagedRules(t *testing.T) {
	eachCompiledRule(t, func(tc tableCase, fam byte, r nft.Rule, cr *compiledRule) {
		exprs := wire(t, fam, cr.exprs)
		for i := range exprs {
			damaged := append(append([]expr.Any{}, exprs[:i]...), exprs[i+1:]...)
			if got := offline(t, fam, cr, damaged); got == r {
				t.Errorf("%s: %q without expression %d (%T) still reads as itself", tc.name, r, i, exprs[i])
			}
		}
	})
}

// TestDecompileForeignShapes checks rules that render never writes: a
// counter, a log, a masked payload the codec does not model. Each must
// read as unsupported rather than as a rule without the unknown part.
func TestDecompileForeignShapes(t *testing.T) {
	base := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{10, 0, 0, 1}},
	}
	cases := map[string][]expr.Any{
		"counter":        append(append([]expr.Any{}, base...), &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}),
		"log":            append(append([]expr.Any{}, base...), &expr.Log{}, &expr.Verdict{Kind: expr.VerdictDrop}),
		"ip ttl":         {&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 1}, &expr.Cmp{Register: 1, Data: []byte{1}}},
		"snat":           {&expr.Immediate{Register: 1, Data: []byte{1, 2, 3, 4}}, &expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1}},
		"lt comparison":  {base[0], &expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: []byte{10, 0, 0, 1}}},
		"wrong register": {base[0], &expr.Cmp{Op: expr.CmpOpEq, Register: 2, Data: []byte{10, 0, 0, 1}}},
	}
	for name, exprs := range cases {
		got := decompileRule(unix.NFPROTO_IPV4, wire(t, unix.NFPROTO_IPV4, exprs), nil, nil)
		if !strings.HasPrefix(string(got), UnsupportedPrefix) {
			t.Errorf("%s: decoded as %q, want the unsupported prefix", name, got)
		}
	}
	// An expression kind google/nftables does not know at all.
	var e nfnl.Encoder
	item := e.Nested(unix.NFTA_LIST_ELEM)
	e.PutString(unix.NFTA_EXPR_NAME, "last")
	e.End(item)
	exprs, err := unmarshalExprs(unix.NFPROTO_IPV4, e.Buf)
	if err != nil {
		t.Fatal(err)
	}
	exprs = append(wire(t, unix.NFPROTO_IPV4, base), append(exprs, &expr.Verdict{Kind: expr.VerdictDrop})...)
	if got := decompileRule(unix.NFPROTO_IPV4, exprs, nil, nil); !strings.HasPrefix(string(got), UnsupportedPrefix+"last ") {
		t.Errorf("an unknown expression kind decoded as %q", got)
	}
}

// TestCompileRejects lists rule texts the compiler must refuse rather
// than half-compile.
func TestCompileRejects(t *testing.T) {
	for _, r := range []string{
		"ip daddr 10.0.0.1 counter drop",
		"ip daddr 10.0.0.1 drop comment \"x\" accept",
		"ip6 daddr ::1 drop", // in an ip table
		"dnat to 10.0.0.1:99999",
		"ip daddr { 10.0.0.1, tcp } drop",
		"jump",
		"meta mark set meta mark + 0x1",
		"numgen random mod 2 offset 4294967295 vmap { 0 : accept, 1 : drop }", // past 2^32, as the kernel refuses
	} {
		if _, err := compileRule(unix.NFPROTO_IPV4, r); err == nil {
			t.Errorf("compiled %q", r)
		}
	}
}
