package iptablesnft

import (
	"encoding/binary"
	"fmt"
)

// Netlink attribute numbers of the expressions read here
// (linux/netfilter/nf_tables.h). They are kernel ABI.
const (
	attrPayloadDreg   = 1
	attrPayloadBase   = 2
	attrPayloadOffset = 3
	attrPayloadLen    = 4

	attrMetaDreg = 1
	attrMetaKey  = 2

	attrCmpSreg = 1
	attrCmpOp   = 2
	attrCmpData = 3

	attrBitwiseSreg = 1
	attrBitwiseDreg = 2
	attrBitwiseLen  = 3
	attrBitwiseMask = 4
	attrBitwiseXor  = 5
	attrBitwiseOp   = 6

	attrImmDreg = 1
	attrImmData = 2

	attrDataValue   = 1
	attrDataVerdict = 2
	attrVerdictCode = 1
	attrVerdictName = 2

	attrXtName = 1 // NFTA_MATCH_NAME, NFTA_TARGET_NAME
	attrXtRev  = 2
	attrXtInfo = 3

	nlaTypeMask = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// attrs is one level of netlink attributes, by type; a type given twice
// keeps its last value, as the kernel's own parser does.
type attrs map[uint16][]byte

func parseAttrs(b []byte) (attrs, error) {
	a := attrs{}
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return nil, fmt.Errorf("malformed netlink attribute (length %d of %d bytes)", l, len(b))
		}
		a[binary.NativeEndian.Uint16(b[2:4])&nlaTypeMask] = b[4:l]
		b = b[min((l+3)&^3, len(b)):]
	}
	return a, nil
}

// u32 reads a big-endian 32-bit attribute.
func (a attrs) u32(typ uint16) (uint32, bool) {
	v, ok := a[typ]
	if !ok || len(v) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(v), true
}

// str reads a NUL-terminated string attribute.
func (a attrs) str(typ uint16) string {
	v := a[typ]
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

// value reads a nested NFTA_DATA_VALUE.
func (a attrs) value(typ uint16) ([]byte, bool) {
	inner, err := parseAttrs(a[typ])
	if err != nil {
		return nil, false
	}
	v, ok := inner[attrDataValue]
	return v, ok
}
