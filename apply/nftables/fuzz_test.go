package nftables

import (
	"strings"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// FuzzDecodeRule feeds arbitrary bytes to the reader's rule decoding, as a
// kernel dump (or anyone who wrote into the table) could present them:
// the expression list is unmarshalled and decompiled, with and without
// anonymous sets to look up. Nothing may panic, and what cannot be decoded
// must read as unsupported rather than as a rule the renderer could write.
// The seeds are every golden and reference rule, compiled and encoded.
func FuzzDecodeRule(f *testing.F) {
	for _, tc := range tableCases(f) {
		fam, _ := familyNumber(tc.rs.Family)
		for _, ch := range tc.rs.Chains {
			for _, r := range ch.Rules {
				cr, err := compileRule(fam, string(r))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(fam, encodeExprs(f, fam, cr.exprs), cr.udata)
			}
		}
	}
	f.Fuzz(func(t *testing.T, fam byte, b, udata []byte) {
		exprs, err := unmarshalExprs(fam, b)
		if err != nil {
			return
		}
		noSets := func(string) (*setInfo, []rawElem, bool) { return nil, nil, false }
		text := string(decompileRule(fam, exprs, udata, noSets))
		if strings.ContainsAny(text, "\n\r\x00") {
			t.Errorf("a decoded rule spans lines: %q", text)
		}
	})
}

// encodeExprs encodes expressions as a rule's NFTA_RULE_EXPRESSIONS.
func encodeExprs(t testing.TB, family byte, exprs []expr.Any) []byte {
	t.Helper()
	var e nfnl.Encoder
	for _, x := range exprs {
		data, err := expr.Marshal(family, x)
		if err != nil {
			t.Fatalf("marshal %T: %v", x, err)
		}
		e.Put(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, data)
	}
	return e.Buf
}
