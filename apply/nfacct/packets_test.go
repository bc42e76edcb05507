package nfacct

import (
	"encoding/binary"
	"testing"
)

// attr is one netlink attribute as the kernel writes it, padded.
func attr(typ uint16, v []byte) []byte {
	b := make([]byte, 4, 4+len(v)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// packetsAttr finds the packet count behind a name of odd length (so
// padded) and before the byte count, and refuses torn answers.
func TestPacketsAttr(t *testing.T) {
	pkts := binary.BigEndian.AppendUint64(nil, 42)
	msg := append([]byte{0, 0, 0, 0}, attr(1, []byte("ct_state_invalid_dropped_pkts\x00"))...)
	msg = append(msg, attr(attrPackets, pkts)...)
	msg = append(msg, attr(3, binary.BigEndian.AppendUint64(nil, 4200))...)
	if n, ok := packetsAttr(msg); !ok || n != 42 {
		t.Errorf("packets %d, %v; want 42", n, ok)
	}
	for _, torn := range [][]byte{msg[:3], msg[:len(msg)-22], append([]byte{0, 0, 0, 0}, 0xff, 0, 2, 0)} {
		if n, ok := packetsAttr(torn); ok {
			t.Errorf("%x: packets %d from a torn answer", torn, n)
		}
	}
}
