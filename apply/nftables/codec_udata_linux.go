package nftables

import (
	"encoding/binary"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// Userdata TLV types (libnftnl udata.h): nft's own layout inside the
// kernel's *_USERDATA attributes, which the kernel stores unread.
const (
	udataComment      = 0 // NFTNL_UDATA_{TABLE,CHAIN,RULE,SET_ELEM}_COMMENT
	udataSetKeyOrder  = 0 // NFTNL_UDATA_SET_KEYBYTEORDER
	udataSetDataOrder = 1 // NFTNL_UDATA_SET_DATABYTEORDER
	udataSetComment   = 7 // NFTNL_UDATA_SET_COMMENT

	// Byte orders as nft records them in set userdata (nft's enum byteorder).
	byteOrderHost = 1
	byteOrderBig  = 2
)

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
	return nfnl.CString(v)
}

func nativeU32(v []byte) uint32 { return binary.NativeEndian.Uint32(v) }
