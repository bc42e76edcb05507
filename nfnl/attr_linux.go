package nfnl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// typeFlags are the bits of an attribute's type that are flags, not the
// type: nested, and network byte order.
const typeFlags = unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER

// Walk calls fn for every attribute in b, in order, with its type (the
// flag bits cleared) and its value, which aliases b. It stops at fn's
// first error and returns it. An attribute whose length is shorter than
// its header or runs past b, or bytes left over that cannot hold a
// header, are an error: b was cut short or is not attributes.
func Walk(b []byte, fn func(typ uint16, v []byte) error) error {
	for len(b) > 0 {
		if len(b) < unix.NLA_HDRLEN {
			return fmt.Errorf("netlink attribute header cut short: %d bytes left", len(b))
		}
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < unix.NLA_HDRLEN || l > len(b) {
			return fmt.Errorf("malformed netlink attribute (length %d of %d bytes)", l, len(b))
		}
		if err := fn(binary.NativeEndian.Uint16(b[2:4])&^typeFlags, b[unix.NLA_HDRLEN:l]); err != nil {
			return err
		}
		b = b[min(attrAlign(l), len(b)):]
	}
	return nil
}

func attrAlign(n int) int { return (n + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

// Attrs is one level of attributes by type. A type given twice keeps its
// last value, as the kernel's own parser does.
type Attrs map[uint16][]byte

// ParseAttrs reads one level of attributes; see Walk for what is an error.
func ParseAttrs(b []byte) (Attrs, error) {
	a := Attrs{}
	err := Walk(b, func(typ uint16, v []byte) error {
		a[typ] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// U32 reads a big-endian 32-bit attribute; ok is false when it is absent
// or not four bytes long.
func (a Attrs) U32(typ uint16) (v uint32, ok bool) {
	b, ok := a[typ]
	if !ok || len(b) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

// String reads a NUL-terminated string attribute; "" when it is absent.
func (a Attrs) String(typ uint16) string { return CString(a[typ]) }

// CString reads a NUL-terminated string value: the bytes before the
// first NUL, or all of them when there is none.
func CString(v []byte) string {
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	return string(v)
}

// BE32 reads a big-endian 32-bit value, 0 when v is shorter.
func BE32(v []byte) uint32 {
	if len(v) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// BE64 reads a big-endian 64-bit value, 0 when v is shorter.
func BE64(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// errNoValue: a data attribute without its NFTA_DATA_VALUE.
var errNoValue = errors.New("nf_tables data without a value")

// DataValue returns the NFTA_DATA_VALUE of a nested nf_tables data
// attribute (a set key, a comparison's operand, an immediate), aliasing
// b; an error when b is malformed or holds none.
func DataValue(b []byte) ([]byte, error) {
	a, err := ParseAttrs(b)
	if err != nil {
		return nil, err
	}
	v, ok := a[unix.NFTA_DATA_VALUE]
	if !ok {
		return nil, errNoValue
	}
	return v, nil
}

// Verdict is the content of an NFTA_DATA_VERDICT.
type Verdict struct {
	// Code is a hook verdict (NF_ACCEPT, NF_DROP, ...) or one of
	// nf_tables' own below zero (unix.NFT_JUMP, unix.NFT_RETURN, ...).
	Code int32
	// Chain is the chain of a jump or goto, else "".
	Chain string
}

// ParseVerdict reads a nested NFTA_DATA_VERDICT: its code, which it must
// hold, and its chain.
func ParseVerdict(b []byte) (Verdict, error) {
	a, err := ParseAttrs(b)
	if err != nil {
		return Verdict{}, err
	}
	code, ok := a.U32(unix.NFTA_VERDICT_CODE)
	if !ok {
		return Verdict{}, errors.New("nf_tables verdict without a code")
	}
	return Verdict{Code: int32(code), Chain: a.String(unix.NFTA_VERDICT_CHAIN)}, nil
}
