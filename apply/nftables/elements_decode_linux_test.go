package nftables

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// listElems encodes elements as a NEWSETELEM's element list and returns
// each NFTA_LIST_ELEM's bytes.
func listElems(t *testing.T, elems []rawElem) [][]byte {
	t.Helper()
	var e nfnl.Encoder
	encodeElementList(&e, elems)
	var list []byte
	if err := nfnl.Walk(e.Buf, func(_ uint16, v []byte) error { list = v; return nil }); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	if err := nfnl.Walk(list, func(_ uint16, v []byte) error { out = append(out, v); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

var sampleElems = []rawElem{
	{key: []byte{10, 96, 0, 10, 0, 6, 0, 80}, verdict: &expr.Verdict{Kind: expr.VerdictJump, Chain: "service-ULMVA6XW-ns1/svc1/tcp/p80"}},
	{key: []byte{10, 0, 0, 0}, data: []byte{1, 2, 3, 4}, timeout: time.Minute, expires: 30 * time.Second, comment: "a comment"},
	{key: []byte{10, 0, 1, 0}, end: true},
}

// An element list reads back as it was written.
func TestElementsReadBack(t *testing.T) {
	for i, b := range listElems(t, sampleElems) {
		got, err := decodeRawElem(b)
		if err != nil || !reflect.DeepEqual(got, sampleElems[i]) {
			t.Errorf("element %d read back as %+v, %v; want %+v", i, got, err, sampleElems[i])
		}
	}
}

// A torn element is an error, not another element: a verdict without its
// code once read as drop. No cut of an element panics.
func TestTornElementIsAnError(t *testing.T) {
	var noCode nfnl.Encoder
	k := noCode.Nested(unix.NFTA_SET_ELEM_KEY)
	noCode.Put(unix.NFTA_DATA_VALUE, []byte{10, 0, 0, 1})
	noCode.End(k)
	d := noCode.Nested(unix.NFTA_SET_ELEM_DATA)
	v := noCode.Nested(unix.NFTA_DATA_VERDICT)
	noCode.PutString(unix.NFTA_VERDICT_CHAIN, "services")
	noCode.End(v)
	noCode.End(d)
	if got, err := decodeRawElem(noCode.Buf); err == nil {
		t.Errorf("a verdict without a code read as %+v", got)
	}
	var noValue nfnl.Encoder
	k = noValue.Nested(unix.NFTA_SET_ELEM_KEY)
	noValue.PutU32(unix.NFTA_DATA_VERDICT, 1)
	noValue.End(k)
	if got, err := decodeRawElem(noValue.Buf); err == nil {
		t.Errorf("a key without a value read as %+v", got)
	}
	for _, b := range listElems(t, sampleElems) {
		for n := range len(b) {
			_, _ = decodeRawElem(b[:n])
		}
	}
}
