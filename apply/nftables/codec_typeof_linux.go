package nftables

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A set declared with "typeof" names its key and data by the expressions
// that load them: nft has no type name for numgen's integer, and refuses
// "type integer". The kernel gets the types the expressions load; nft
// keeps the expressions in the set's userdata and lists them from there.
// The layout (nft 1.0.6's src/*.c build_udata functions, read off nft's
// own messages with `nft --debug=mnl`):
//
//	key typeof (3) or data typeof (4):
//	  0: u32 expression kind (nft's enum expr_types)
//	  1: nested, the kind's own attributes:
//	       numgen:  0 type (1, random), 1 modulus, 2 offset
//	       payload: 0 protocol description, 1 header field
//	       concat:  i: nested, part i: 0 kind, 1 nested attributes
//
// All u32 values are host-endian. This codec writes and reads the
// expressions the compact layout declares: numgen, a destination address
// and the transport destination port, alone or concatenated.
const (
	udataSetKeyTypeof  = 3 // NFTNL_UDATA_SET_KEY_TYPEOF
	udataSetDataTypeof = 4 // NFTNL_UDATA_SET_DATA_TYPEOF

	udataTypeofKind = 0 // NFTNL_UDATA_SET_TYPEOF_EXPR
	udataTypeofData = 1 // NFTNL_UDATA_SET_TYPEOF_DATA

	exprKindValue   = 4  // EXPR_VALUE
	exprKindPayload = 7  // EXPR_PAYLOAD
	exprKindConcat  = 13 // EXPR_CONCAT
	exprKindNumgen  = 23 // EXPR_NUMGEN
)

// typeofPayload is a header field a typeof declaration may name: nft's
// protocol description and field numbers, and the type it loads.
type typeofPayload struct {
	name        string
	desc, field uint32
	typ         *dataType
}

var typeofPayloads = []typeofPayload{
	{"ip daddr", 12, 12, typeIPv4},   // PROTO_DESC_IP, IPHDR_DADDR
	{"ip6 daddr", 13, 9, typeIPv6},   // PROTO_DESC_IP6, IP6HDR_DADDR
	{"th dport", 11, 2, typeService}, // PROTO_DESC_TH, THDR_DPORT
}

// encodeTypeof reads a typeof expression ("numgen random mod 1", "ip
// daddr . th dport") into the type it loads and its userdata value.
func encodeTypeof(text string) (setType, []byte, error) {
	parts := strings.Split(text, " . ")
	var st setType
	var kinds []uint32
	var attrs [][]byte
	for _, p := range parts {
		t, kind, a, err := encodeTypeofPart(p)
		if err != nil {
			return nil, nil, err
		}
		st, kinds, attrs = append(st, t), append(kinds, kind), append(attrs, a)
	}
	if len(parts) == 1 {
		return st, typeofTLVs(kinds[0], attrs[0]), nil
	}
	var nested []byte
	for i := range parts {
		nested = appendUdata(nested, byte(i), typeofTLVs(kinds[i], attrs[i]))
	}
	// A userdata value's length is one byte.
	if ud := typeofTLVs(exprKindConcat, nested); len(nested) <= 255 && len(ud) <= 255 {
		return st, ud, nil
	}
	return nil, nil, fmt.Errorf("typeof %q is too long for the set's userdata", text)
}

func typeofTLVs(kind uint32, attrs []byte) []byte {
	return appendUdata(appendUdataU32(nil, udataTypeofKind, kind), udataTypeofData, attrs)
}

func encodeTypeofPart(p string) (*dataType, uint32, []byte, error) {
	if rest, ok := strings.CutPrefix(p, "numgen random mod "); ok {
		mod, offset, err := parseNumgenText(rest)
		if err != nil {
			return nil, 0, nil, err
		}
		a := appendUdataU32(nil, 0, unix.NFT_NG_RANDOM)
		a = appendUdataU32(a, 1, mod)
		return typeInteger, exprKindNumgen, appendUdataU32(a, 2, offset), nil
	}
	for _, f := range typeofPayloads {
		if f.name == p {
			return f.typ, exprKindPayload, appendUdataU32(appendUdataU32(nil, 0, f.desc), 1, f.field), nil
		}
	}
	return nil, 0, nil, fmt.Errorf("unsupported typeof expression %q", p)
}

// parseNumgenText reads "N" or "N offset M" after "numgen random mod ".
func parseNumgenText(s string) (mod, offset uint32, err error) {
	m, o, hasOffset := strings.Cut(s, " offset ")
	n, err := strconv.ParseUint(m, 10, 32)
	if err != nil || n == 0 {
		return 0, 0, fmt.Errorf("bad numgen modulus %q", m)
	}
	var off uint64
	if hasOffset {
		if off, err = strconv.ParseUint(o, 10, 32); err != nil || off == 0 {
			return 0, 0, fmt.Errorf("bad numgen offset %q", o)
		}
	}
	return uint32(n), uint32(off), nil
}

// decodeTypeof prints a typeof userdata value as nft does; false for an
// expression this codec does not write.
func decodeTypeof(v []byte) (string, bool) {
	kind, attrs, ok := typeofKind(v)
	if !ok {
		return "", false
	}
	if kind != exprKindConcat {
		return decodeTypeofPart(kind, attrs)
	}
	var parts []string
	for i := 0; ; i++ {
		sub, ok := udataGet(attrs, byte(i))
		if !ok {
			break
		}
		k, a, ok := typeofKind(sub)
		if !ok {
			return "", false
		}
		p, ok := decodeTypeofPart(k, a)
		if !ok {
			return "", false
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " . "), len(parts) > 1
}

// typeofIsValue reports whether a typeof userdata value holds only type
// names: nft records one for a set declared with "type" too (a value, or a
// concatenation of values or of no parts: nft 1.0.6 writes an empty
// concatenation for "type ipv4_addr . inet_service"), and lists that set
// with "type".
func typeofIsValue(v []byte) bool {
	kind, attrs, ok := typeofKind(v)
	if !ok || kind == exprKindValue {
		return ok
	}
	if kind != exprKindConcat {
		return false
	}
	for i := 0; ; i++ {
		sub, ok := udataGet(attrs, byte(i))
		if !ok {
			return true
		}
		if k, _, ok := typeofKind(sub); !ok || k != exprKindValue {
			return false
		}
	}
}

func typeofKind(v []byte) (uint32, []byte, bool) {
	k, ok := udataGet(v, udataTypeofKind)
	attrs, ok2 := udataGet(v, udataTypeofData)
	if !ok || !ok2 || len(k) != 4 {
		return 0, nil, false
	}
	return nativeU32(k), attrs, true
}

func decodeTypeofPart(kind uint32, attrs []byte) (string, bool) {
	u32 := func(typ byte) (uint32, bool) {
		v, ok := udataGet(attrs, typ)
		if !ok || len(v) != 4 {
			return 0, false
		}
		return binary.NativeEndian.Uint32(v), true
	}
	switch kind {
	case exprKindNumgen:
		typ, ok1 := u32(0)
		mod, ok2 := u32(1)
		offset, _ := u32(2)
		if !ok1 || !ok2 || typ != unix.NFT_NG_RANDOM || mod == 0 {
			return "", false
		}
		return newNumgenField(mod, offset).name, true
	case exprKindPayload:
		desc, ok1 := u32(0)
		field, ok2 := u32(1)
		for _, f := range typeofPayloads {
			if ok1 && ok2 && f.desc == desc && f.field == field {
				return f.name, true
			}
		}
	}
	return "", false
}
