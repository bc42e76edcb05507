package kernel

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// traceEvent encodes a trace event's payload: a rule of ip kube-proxy
// that jumped to services, as the kernel sends it.
func traceEvent() []byte {
	e := nfnl.Encoder{Buf: []byte{unix.NFPROTO_IPV4, unix.NFNETLINK_V0, 0, 0}}
	e.PutString(unix.NFTA_TRACE_TABLE, "kube-proxy")
	e.PutString(unix.NFTA_TRACE_CHAIN, "nat-prerouting")
	e.PutU64(unix.NFTA_TRACE_RULE_HANDLE, 45)
	e.PutU32(unix.NFTA_TRACE_TYPE, unix.NFT_TRACETYPE_RULE)
	e.PutU32(unix.NFTA_TRACE_ID, 99)
	v := e.Nested(unix.NFTA_TRACE_VERDICT)
	e.PutU32(unix.NFTA_VERDICT_CODE, uint32(0xfffffffd)) // NFT_JUMP
	e.PutString(unix.NFTA_VERDICT_CHAIN, "services")
	e.End(v)
	return e.Buf
}

func TestDecodeEvent(t *testing.T) {
	ev, err := DecodeEvent(traceEvent())
	if err != nil {
		t.Fatal(err)
	}
	want := Event{ID: 99, Family: "ip", Table: "kube-proxy", Chain: "nat-prerouting", Handle: 45, Type: "rule", Verdict: "jump services"}
	if ev.ID != want.ID || ev.Family != want.Family || ev.Table != want.Table || ev.Chain != want.Chain ||
		ev.Handle != want.Handle || ev.Type != want.Type || ev.Verdict != want.Verdict {
		t.Errorf("decoded %+v, want %+v", ev, want)
	}
	policy := nfnl.Encoder{Buf: []byte{unix.NFPROTO_INET, 0, 0, 0}}
	policy.PutU32(unix.NFTA_TRACE_TYPE, unix.NFT_TRACETYPE_POLICY)
	policy.PutU32(unix.NFTA_TRACE_POLICY, nfnl.NF_DROP)
	if ev, err := DecodeEvent(policy.Buf); err != nil || ev.Family != "inet" || ev.Type != "policy" || ev.Verdict != "drop" {
		t.Errorf("a policy event decoded as %+v, %v", ev, err)
	}
}

// A torn event is an error: cut anywhere inside its header or an
// attribute, or with a verdict that has no code.
func TestDecodeEventMalformed(t *testing.T) {
	b := traceEvent()
	for _, k := range []int{0, 3, 6, 21, len(b) - 5, len(b) - 1} {
		if ev, err := DecodeEvent(b[:k]); err == nil {
			t.Errorf("cut at %d of %d: decoded %+v", k, len(b), ev)
		}
	}
	e := nfnl.Encoder{Buf: []byte{unix.NFPROTO_IPV4, 0, 0, 0}}
	v := e.Nested(unix.NFTA_TRACE_VERDICT)
	e.PutString(unix.NFTA_VERDICT_CHAIN, "services")
	e.End(v)
	if ev, err := DecodeEvent(e.Buf); err == nil {
		t.Errorf("a verdict without a code decoded as %+v", ev)
	}
}

// decodeMessages keeps the trace events of a datagram and skips other
// messages; a datagram cut short is an error.
func TestDecodeMessages(t *testing.T) {
	var e nfnl.Encoder
	for _, typ := range []uint16{nfnl.NFTablesType(unix.NFT_MSG_TRACE), nfnl.NFTablesType(unix.NFT_MSG_NEWGEN), nfnl.NFTablesType(unix.NFT_MSG_TRACE)} {
		start := e.BeginMsg(typ, 0, unix.NFPROTO_IPV4, 0)
		e.Buf = append(e.Buf, traceEvent()[4:]...)
		e.EndMsg(start)
	}
	evs, err := decodeMessages(e.Buf)
	if err != nil || len(evs) != 2 || evs[1].Verdict != "jump services" {
		t.Errorf("decoded %+v, %v; want two events", evs, err)
	}
	if evs, err := decodeMessages(e.Buf[:len(e.Buf)-3]); err == nil {
		t.Errorf("a cut datagram decoded as %+v", evs)
	}
	bad := binary.NativeEndian.AppendUint32(nil, 8)
	if evs, err := decodeMessages(append(bad, e.Buf[4:]...)); err == nil {
		t.Errorf("a message shorter than its header decoded as %+v", evs)
	}
}
