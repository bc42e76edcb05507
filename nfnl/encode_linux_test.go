package nfnl

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// The header BeginMsg writes is netlink's, then nfgenmsg's, in the byte
// orders the kernel reads them.
func TestBeginMsg(t *testing.T) {
	e := Encoder{Buf: []byte{0xaa, 0xbb, 0xcc, 0xdd}}
	start := e.BeginMsg(0x0a06, unix.NLM_F_REQUEST|unix.NLM_F_CREATE, unix.NFPROTO_IPV6, 0x1234)
	e.PutU32(unix.NFTA_CHAIN_POLICY, NF_ACCEPT)
	e.EndMsg(start)
	want := []byte{0xaa, 0xbb, 0xcc, 0xdd}
	want = binary.NativeEndian.AppendUint32(want, 28)
	want = binary.NativeEndian.AppendUint16(want, 0x0a06)
	want = binary.NativeEndian.AppendUint16(want, unix.NLM_F_REQUEST|unix.NLM_F_CREATE)
	want = append(want, make([]byte, 8)...)
	want = append(want, unix.NFPROTO_IPV6, unix.NFNETLINK_V0, 0x12, 0x34)
	want = binary.NativeEndian.AppendUint16(want, 8)
	want = binary.NativeEndian.AppendUint16(want, unix.NFTA_CHAIN_POLICY)
	want = append(want, 0, 0, 0, 1)
	if !bytes.Equal(e.Buf, want) {
		t.Errorf("encoded\n% x\nwant\n% x", e.Buf, want)
	}
}

// Attributes are padded to four bytes, lengths leave the padding out of
// a plain value and take it into a nest, Nested sets NLA_F_NESTED and Put
// clears it.
func TestAttributeLayout(t *testing.T) {
	var e Encoder
	e.PutString(1, "ab")
	n := e.Nested(2)
	e.PutU64(3, 0x0102030405060708)
	e.End(n)
	e.Put(4|unix.NLA_F_NESTED, []byte{1, 2, 3, 4, 5})
	le := func(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
	var want []byte
	for _, part := range [][]byte{
		le(7), le(1), {'a', 'b', 0, 0},
		le(16), le(2 | unix.NLA_F_NESTED), le(12), le(3), {1, 2, 3, 4, 5, 6, 7, 8},
		le(9), le(4), {1, 2, 3, 4, 5, 0, 0, 0},
	} {
		want = append(want, part...)
	}
	if !bytes.Equal(e.Buf, want) {
		t.Errorf("encoded\n% x\nwant\n% x", e.Buf, want)
	}
}

// An attribute longer than a 16-bit length can say is an error, the first
// one kept, rather than a length that wraps.
func TestEncoderOverflow(t *testing.T) {
	var e Encoder
	n := e.Nested(1)
	e.Put(2, make([]byte, 0xfff0))
	e.Put(3, make([]byte, 0x20))
	e.End(n)
	if e.Err == nil {
		t.Fatal("a nest of more than 64 KiB encoded without an error")
	}
	first := e.Err
	big := e.Begin(4)
	e.Buf = append(e.Buf, make([]byte, 0x10000)...)
	e.End(big)
	if e.Err != first {
		t.Errorf("the first overflow's error was replaced by %v", e.Err)
	}
	if l := binary.NativeEndian.Uint16(e.Buf[n:]); l != 0xffff {
		t.Errorf("the overflowing length reads %#x, want it held at 0xffff", l)
	}
}
