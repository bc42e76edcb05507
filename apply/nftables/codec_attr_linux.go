package nftables

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// encoder appends netlink messages and attributes to one buffer. Netlink
// attribute lengths are 16 bits: end reports an attribute that outgrew them
// instead of letting its length wrap (which is how google/nftables v0.3.0
// loses elements silently).
type encoder struct {
	b   []byte
	err error
}

// beginMsg starts an nfnetlink message and returns its offset for endMsg.
// The sequence number is filled in when the batch is sent.
func (e *encoder) beginMsg(typ, flags uint16, family byte, resID uint16) int {
	start := len(e.b)
	e.b = binary.NativeEndian.AppendUint32(e.b, 0)
	e.b = binary.NativeEndian.AppendUint16(e.b, typ)
	e.b = binary.NativeEndian.AppendUint16(e.b, flags)
	e.b = binary.NativeEndian.AppendUint32(e.b, 0) // seq
	e.b = binary.NativeEndian.AppendUint32(e.b, 0) // port id: the kernel's
	e.b = append(e.b, family, unix.NFNETLINK_V0)
	e.b = binary.BigEndian.AppendUint16(e.b, resID)
	return start
}

func (e *encoder) endMsg(start int) {
	binary.NativeEndian.PutUint32(e.b[start:], uint32(len(e.b)-start))
}

func (e *encoder) put(typ uint16, v []byte) {
	start := e.nest(typ &^ unix.NLA_F_NESTED)
	e.b = append(e.b, v...)
	e.end(start)
}

func (e *encoder) putString(typ uint16, s string) {
	start := e.nest(typ &^ unix.NLA_F_NESTED)
	e.b = append(e.b, s...)
	e.b = append(e.b, 0)
	e.end(start)
}

func (e *encoder) putU32(typ uint16, v uint32) {
	start := e.nest(typ &^ unix.NLA_F_NESTED)
	e.b = binary.BigEndian.AppendUint32(e.b, v)
	e.end(start)
}

func (e *encoder) putU64(typ uint16, v uint64) {
	start := e.nest(typ &^ unix.NLA_F_NESTED)
	e.b = binary.BigEndian.AppendUint64(e.b, v)
	e.end(start)
}

// nest starts an attribute whose value follows; end closes it. Pass the
// type without NLA_F_NESTED for a plain attribute built piecewise.
func (e *encoder) nest(typ uint16) int {
	start := len(e.b)
	e.b = binary.NativeEndian.AppendUint16(e.b, 0)
	e.b = binary.NativeEndian.AppendUint16(e.b, typ)
	return start
}

func (e *encoder) nested(typ uint16) int { return e.nest(typ | unix.NLA_F_NESTED) }

func (e *encoder) end(start int) {
	l := len(e.b) - start
	if l > 0xffff {
		if e.err == nil {
			e.err = fmt.Errorf("netlink attribute of %d bytes exceeds the 16-bit length", l)
		}
		l = 0xffff
	}
	binary.NativeEndian.PutUint16(e.b[start:], uint16(l))
	for len(e.b)%unix.NLA_ALIGNTO != 0 {
		e.b = append(e.b, 0)
	}
}

// walkAttrs calls fn for every attribute in b, with the NLA_F_NESTED and
// NLA_F_NET_BYTEORDER bits cleared from the type.
func walkAttrs(b []byte, fn func(typ uint16, v []byte) error) error {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		typ := binary.NativeEndian.Uint16(b[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(b) {
			return fmt.Errorf("malformed netlink attribute (length %d of %d bytes)", l, len(b))
		}
		if err := fn(typ, b[4:l]); err != nil {
			return err
		}
		b = b[min((l+unix.NLA_ALIGNTO-1)&^(unix.NLA_ALIGNTO-1), len(b)):]
	}
	return nil
}

// cString reads a NUL-terminated attribute value.
func cString(v []byte) string {
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	return string(v)
}

func be32(v []byte) uint32 {
	if len(v) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

func be64(v []byte) uint64 {
	if len(v) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// Message types and the attributes that golang.org/x/sys/unix lacks
// (linux/netfilter/nf_tables.h).
const (
	nftaTableUserdata = 6  // NFTA_TABLE_USERDATA
	nftaChainUserdata = 12 // NFTA_CHAIN_USERDATA
	nftaSetUserdata   = 13 // NFTA_SET_USERDATA
	nftaSetDescSize   = 1  // NFTA_SET_DESC_SIZE

	// Userdata TLV types (libnftnl udata.h).
	udataComment      = 0 // NFTNL_UDATA_{TABLE,CHAIN,RULE,SET_ELEM}_COMMENT
	udataSetKeyOrder  = 0 // NFTNL_UDATA_SET_KEYBYTEORDER
	udataSetDataOrder = 1 // NFTNL_UDATA_SET_DATABYTEORDER
	udataSetComment   = 7 // NFTNL_UDATA_SET_COMMENT

	// Byte orders as nft records them in set userdata (nft's enum byteorder).
	byteOrderHost = 1
	byteOrderBig  = 2
)

func msgType(m uint16) uint16 { return unix.NFNL_SUBSYS_NFTABLES<<8 | m }

// appendUdata appends one userdata TLV (type, length, value).
func appendUdata(b []byte, typ byte, v []byte) []byte {
	return append(append(b, typ, byte(len(v))), v...)
}

// appendUdataString appends a NUL-terminated string TLV; strings longer
// than a TLV can hold are cut (nft caps comments at 128 bytes).
func appendUdataString(b []byte, typ byte, s string) []byte {
	if len(s) > 254 {
		s = s[:254]
	}
	return appendUdata(b, typ, append([]byte(s), 0))
}

func appendUdataU32(b []byte, typ byte, v uint32) []byte {
	return appendUdata(b, typ, binary.NativeEndian.AppendUint32(nil, v))
}

// udataGet returns the value of the first TLV of type typ.
func udataGet(b []byte, typ byte) ([]byte, bool) {
	for len(b) >= 2 {
		l := int(b[1])
		if 2+l > len(b) {
			return nil, false
		}
		if b[0] == typ {
			return b[2 : 2+l], true
		}
		b = b[2+l:]
	}
	return nil, false
}

func udataString(b []byte, typ byte) string {
	v, _ := udataGet(b, typ)
	return cString(v)
}

func nativeU32(v []byte) uint32 { return binary.NativeEndian.Uint32(v) }
