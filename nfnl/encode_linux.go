package nfnl

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Encoder appends netlink messages and attributes to one buffer. Netlink
// attribute lengths are 16 bits: an attribute that outgrows them sets Err
// instead of letting its length wrap (which is how google/nftables v0.3.0
// loses set elements silently).
type Encoder struct {
	// Buf holds what was encoded. The caller may give it a buffer of its
	// own to append to, and take it back.
	Buf []byte
	// Err is the first attribute that outgrew its length, until the
	// caller clears it.
	Err error
}

// BeginMsg starts an nfnetlink message and returns its offset for
// EndMsg. The sequence number is left 0, for the sender to fill in; the
// port ID is 0, the kernel's.
func (e *Encoder) BeginMsg(typ, flags uint16, family byte, resID uint16) int {
	start := len(e.Buf)
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, 0) // length, set by EndMsg
	e.Buf = binary.NativeEndian.AppendUint16(e.Buf, typ)
	e.Buf = binary.NativeEndian.AppendUint16(e.Buf, flags)
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, 0) // seq
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, 0) // port ID
	e.Buf = append(e.Buf, family, unix.NFNETLINK_V0)
	e.Buf = binary.BigEndian.AppendUint16(e.Buf, resID)
	return start
}

// EndMsg sets the length of the message started at start.
func (e *Encoder) EndMsg(start int) {
	binary.NativeEndian.PutUint32(e.Buf[start:], uint32(len(e.Buf)-start))
}

// Put appends an attribute holding v. NLA_F_NESTED is taken off typ:
// what Put writes is a plain value, even one that is itself attributes.
func (e *Encoder) Put(typ uint16, v []byte) {
	start := e.Begin(typ &^ unix.NLA_F_NESTED)
	e.Buf = append(e.Buf, v...)
	e.End(start)
}

// PutString appends a NUL-terminated string attribute.
func (e *Encoder) PutString(typ uint16, s string) {
	start := e.Begin(typ &^ unix.NLA_F_NESTED)
	e.Buf = append(e.Buf, s...)
	e.Buf = append(e.Buf, 0)
	e.End(start)
}

// PutU32 appends a big-endian 32-bit attribute.
func (e *Encoder) PutU32(typ uint16, v uint32) {
	start := e.Begin(typ &^ unix.NLA_F_NESTED)
	e.Buf = binary.BigEndian.AppendUint32(e.Buf, v)
	e.End(start)
}

// PutU64 appends a big-endian 64-bit attribute.
func (e *Encoder) PutU64(typ uint16, v uint64) {
	start := e.Begin(typ &^ unix.NLA_F_NESTED)
	e.Buf = binary.BigEndian.AppendUint64(e.Buf, v)
	e.End(start)
}

// Begin starts an attribute of type typ, as given, whose value the caller
// appends; End closes it. Nested starts one with NLA_F_NESTED.
func (e *Encoder) Begin(typ uint16) int {
	start := len(e.Buf)
	e.Buf = binary.NativeEndian.AppendUint16(e.Buf, 0)
	e.Buf = binary.NativeEndian.AppendUint16(e.Buf, typ)
	return start
}

// Nested starts an attribute that holds attributes.
func (e *Encoder) Nested(typ uint16) int { return e.Begin(typ | unix.NLA_F_NESTED) }

// End sets the length of the attribute started at start and pads it to
// the attribute alignment.
func (e *Encoder) End(start int) {
	l := len(e.Buf) - start
	if l > 0xffff {
		if e.Err == nil {
			e.Err = fmt.Errorf("netlink attribute of %d bytes exceeds the 16-bit length", l)
		}
		l = 0xffff
	}
	binary.NativeEndian.PutUint16(e.Buf[start:], uint16(l))
	for len(e.Buf)%unix.NLA_ALIGNTO != 0 {
		e.Buf = append(e.Buf, 0)
	}
}
