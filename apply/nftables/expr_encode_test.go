package nftables

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// marshalled is e as expr.Marshal writes it, in a list element.
func marshalled(t testing.TB, family byte, e expr.Any) []byte {
	t.Helper()
	data, err := expr.Marshal(family, e)
	if err != nil {
		t.Fatalf("marshal %T: %v", e, err)
	}
	var enc nfnl.Encoder
	enc.Put(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, data)
	return enc.Buf
}

// put is e as putExpr writes it into a batch.
func put(t testing.TB, family byte, e expr.Any) []byte {
	t.Helper()
	b := &Batch{fam: family}
	if err := b.putExpr(e); err != nil {
		t.Fatalf("putExpr %T: %v", e, err)
	}
	return b.enc.Buf
}

// TestPutExprIsMarshal holds putExpr to expr.Marshal, byte for byte, on
// every expression of every rule of the golden tables and reference dumps,
// and on the options those rules do not use.
func TestPutExprIsMarshal(t *testing.T) {
	fast := map[string]int{}
	check := func(where string, family byte, e expr.Any) {
		if got, want := put(t, family, e), marshalled(t, family, e); !bytes.Equal(got, want) {
			t.Errorf("%s: %T %+v:\n got % x\nwant % x", where, e, e, got, want)
		}
		if (&Batch{fam: family}).putFastExpr(e) {
			fast[fmt.Sprintf("%T", e)]++
		}
	}
	eachCompiledRule(t, func(tc tableCase, fam byte, r nft.Rule, cr *compiledRule) {
		for _, e := range cr.exprs {
			check(fmt.Sprintf("%s: %q", tc.name, r), fam, e)
		}
	})
	for i, e := range putExprOptions() {
		check(fmt.Sprintf("option %d", i), unix.NFPROTO_IPV4, e)
	}
	for _, kind := range []string{"*expr.Payload", "*expr.Meta", "*expr.Cmp", "*expr.Immediate", "*expr.Verdict", "*expr.Numgen", "*expr.Lookup", "*expr.NAT"} {
		if fast[kind] == 0 {
			t.Errorf("no %s was written by putFastExpr", kind)
		}
	}
}

// putExprOptions are the expressions' options that the golden rules may
// not use, some written directly and some through expr.Marshal.
func putExprOptions() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
		&expr.Verdict{Kind: expr.VerdictDrop},
		&expr.Verdict{Kind: expr.VerdictGoto, Chain: "a-chain-of-odd-length"},
		&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: "map", SetID: 7},
		&expr.Lookup{SourceRegister: 1, Invert: true, SetName: "s"},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV6, RegAddrMin: 1, RegAddrMax: 2, RegProtoMin: 3, RegProtoMax: 4, Specified: true},
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, FullyRandom: true},
		&expr.Payload{OperationType: expr.PayloadWrite, SourceRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 1, CsumType: expr.CsumTypeInet, CsumOffset: 10},
		&expr.Numgen{Register: 1, Modulus: 3, Type: unix.NFT_NG_INCREMENTAL, Offset: 5},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{1, 2, 3}},
		&expr.Immediate{Register: 9, Data: []byte("sixteen bytes!!!")},
		&expr.Counter{},
	}
}
