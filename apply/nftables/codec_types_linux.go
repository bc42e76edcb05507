package nftables

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dataType is one of nft's data types (nft's include/datatype.h): its
// number in set declarations ("magic"), its size, the byte order nft
// records for it in set userdata, and its text form.
type dataType struct {
	name  string
	magic uint32
	len   int
	order uint32 // byteOrderHost, byteOrderBig, or 0 where nft records none
	// parse reads one value; format prints one (false: not printable).
	parse  func(s string) ([]byte, error)
	format func(b []byte) (string, bool)
}

// Data types this package reads and writes, by name.
var (
	typeVerdict   = &dataType{name: "verdict", magic: 1}
	typeInteger   = &dataType{name: "integer", magic: 4, len: 4, order: byteOrderHost, parse: parseUint32Host, format: formatUint32Host}
	typeIPv4      = &dataType{name: "ipv4_addr", magic: 7, len: 4, order: byteOrderBig, parse: parseAddr(4), format: formatAddr}
	typeIPv6      = &dataType{name: "ipv6_addr", magic: 8, len: 16, order: byteOrderBig, parse: parseAddr(16), format: formatAddr}
	typeInetProto = &dataType{name: "inet_proto", magic: 12, len: 1, order: byteOrderBig, parse: parseProto, format: formatProto}
	typeService   = &dataType{name: "inet_service", magic: 13, len: 2, order: byteOrderBig, parse: parsePort, format: formatPort}
	typeMark      = &dataType{name: "mark", magic: 19, len: 4, order: byteOrderHost, parse: parseHex32Host, format: formatHex32Host}
	typeCtState   = &dataType{name: "ct_state", magic: 26, len: 4, order: byteOrderHost, parse: parseBits(ctStateBits), format: formatBits(ctStateBits)}
	typeCtStatus  = &dataType{name: "ct_status", magic: 28, len: 4, order: byteOrderHost, parse: parseBits(ctStatusBits), format: formatBits(ctStatusBits)}
	typeFibAddr   = &dataType{name: "fib_addrtype", magic: 38, len: 4, order: byteOrderHost, parse: parseFibType, format: formatFibType}
	typeIfname    = &dataType{name: "ifname", magic: 41, len: 16, parse: parseIfname, format: formatIfname}

	dataTypes = []*dataType{typeVerdict, typeInteger, typeIPv4, typeIPv6, typeInetProto,
		typeService, typeMark, typeCtState, typeCtStatus, typeFibAddr, typeIfname}
)

// nftDataVerdict is the data type number the kernel uses for verdict maps.
const nftDataVerdict = unix.NFT_DATA_VERDICT

// concatBits is the width of one type's number in a concatenation's.
const concatBits = 6

func typeByName(name string) *dataType {
	for _, t := range dataTypes {
		if t.name == name {
			return t
		}
	}
	return nil
}

func typeByMagic(magic uint32) *dataType {
	for _, t := range dataTypes {
		if t.magic == magic {
			return t
		}
	}
	return nil
}

// setType is a set's key or data type: one data type or a concatenation.
type setType []*dataType

// parseSetType reads "ipv4_addr . inet_proto . inet_service".
func parseSetType(s string) (setType, error) {
	var out setType
	for part := range strings.SplitSeq(s, " . ") {
		t := typeByName(part)
		if t == nil || t == typeVerdict && s != "verdict" {
			return nil, fmt.Errorf("unsupported data type %q", part)
		}
		out = append(out, t)
	}
	if len(out) > 32/concatBits {
		return nil, fmt.Errorf("type %q concatenates more than %d types", s, 32/concatBits)
	}
	return out, nil
}

// decodeSetType is parseSetType for a type number as the kernel returns it.
func decodeSetType(magic uint32) (setType, bool) {
	if magic == nftDataVerdict {
		return setType{typeVerdict}, true
	}
	var out setType
	for ; magic != 0; magic >>= concatBits {
		t := typeByMagic(magic & (1<<concatBits - 1))
		if t == nil || t == typeVerdict {
			return nil, false
		}
		out = append(setType{t}, out...)
	}
	return out, len(out) > 0
}

func (st setType) String() string {
	names := make([]string, len(st))
	for i, t := range st {
		names[i] = t.name
	}
	return strings.Join(names, " . ")
}

func (st setType) isVerdict() bool { return len(st) == 1 && st[0] == typeVerdict }

// magic is the type number the kernel stores for the set.
func (st setType) magic() uint32 {
	if st.isVerdict() {
		return nftDataVerdict
	}
	var m uint32
	for _, t := range st {
		m = m<<concatBits | t.magic
	}
	return m
}

// size is the key or data length: a concatenation pads every part to the
// 32-bit register size.
func (st setType) size() int {
	if len(st) == 1 {
		return st[0].len
	}
	n := 0
	for _, t := range st {
		n += pad4(t.len)
	}
	return n
}

// order is the byte order nft records for the type: a concatenation has none.
func (st setType) order() uint32 {
	if len(st) == 1 {
		return st[0].order
	}
	return 0
}

func pad4(n int) int { return (n + 3) &^ 3 }

// encodeValue reads "a . b . c" into the type's binary form.
func (st setType) encodeValue(s string) ([]byte, error) {
	parts := strings.Split(s, " . ")
	if len(parts) != len(st) {
		return nil, fmt.Errorf("%q has %d parts, type %s has %d", s, len(parts), st, len(st))
	}
	var out []byte
	for i, t := range st {
		if t.parse == nil {
			return nil, fmt.Errorf("values of type %s cannot be written", t.name)
		}
		b, err := t.parse(parts[i])
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", t.name, parts[i], err)
		}
		out = append(out, b...)
		if len(st) > 1 {
			out = append(out, make([]byte, pad4(len(b))-len(b))...)
		}
	}
	return out, nil
}

// formatValue prints a binary value of the type as nft does.
func (st setType) formatValue(b []byte) (string, bool) {
	if len(b) != st.size() {
		return "", false
	}
	parts := make([]string, len(st))
	for i, t := range st {
		n := t.len
		if t.format == nil {
			return "", false
		}
		s, ok := t.format(b[:n])
		if !ok {
			return "", false
		}
		parts[i] = s
		if len(st) > 1 {
			n = pad4(n)
		}
		b = b[n:]
	}
	return strings.Join(parts, " . "), true
}

func parseAddr(size int) func(string) ([]byte, error) {
	return func(s string) ([]byte, error) {
		a, err := netip.ParseAddr(s)
		if err != nil || a.BitLen() != size*8 || a.Zone() != "" {
			return nil, fmt.Errorf("not an IPv%d address", map[int]int{4: 4, 16: 6}[size])
		}
		return a.AsSlice(), nil
	}
}

func formatAddr(b []byte) (string, bool) {
	a, ok := netip.AddrFromSlice(b)
	return a.String(), ok
}

// protoNames are the protocol names nft prints (from /etc/protocols).
var protoNames = map[byte]string{1: "icmp", 6: "tcp", 17: "udp", 33: "dccp", 47: "gre",
	50: "esp", 51: "ah", 58: "ipv6-icmp", 132: "sctp", 136: "udplite"}

func parseProto(s string) ([]byte, error) {
	for n, name := range protoNames {
		if name == s {
			return []byte{n}, nil
		}
	}
	n, err := strconv.ParseUint(s, 10, 8)
	return []byte{byte(n)}, err
}

func formatProto(b []byte) (string, bool) {
	if len(b) != 1 {
		return "", false
	}
	if name, ok := protoNames[b[0]]; ok {
		return name, true
	}
	return strconv.Itoa(int(b[0])), true
}

func parsePort(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	return binary.BigEndian.AppendUint16(nil, uint16(n)), err
}

func formatPort(b []byte) (string, bool) {
	if len(b) != 2 {
		return "", false
	}
	return strconv.Itoa(int(binary.BigEndian.Uint16(b))), true
}

func parseUint32Host(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	return binary.NativeEndian.AppendUint32(nil, uint32(n)), err
}

func formatUint32Host(b []byte) (string, bool) {
	if len(b) != 4 {
		return "", false
	}
	return strconv.FormatUint(uint64(binary.NativeEndian.Uint32(b)), 10), true
}

func parseHex32Host(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	return binary.NativeEndian.AppendUint32(nil, uint32(n)), err
}

func formatHex32Host(b []byte) (string, bool) {
	if len(b) != 4 {
		return "", false
	}
	return fmt.Sprintf("0x%08x", binary.NativeEndian.Uint32(b)), true
}

// Flag names of ct state and ct status, in the order nft prints them.
var (
	ctStateBits  = []flagName{{"invalid", 1}, {"established", 2}, {"related", 4}, {"new", 8}, {"untracked", 64}}
	ctStatusBits = []flagName{{"expected", 1}, {"seen-reply", 2}, {"assured", 4}, {"confirmed", 8},
		{"snat", 16}, {"dnat", 32}, {"dying", 512}}
)

type flagName struct {
	name string
	bit  uint32
}

func parseBits(names []flagName) func(string) ([]byte, error) {
	return func(s string) ([]byte, error) {
		var v uint32
	next:
		for part := range strings.SplitSeq(s, ",") {
			for _, f := range names {
				if f.name == part {
					v |= f.bit
					continue next
				}
			}
			return nil, fmt.Errorf("unknown flag %q", part)
		}
		return binary.NativeEndian.AppendUint32(nil, v), nil
	}
}

func formatBits(names []flagName) func([]byte) (string, bool) {
	return func(b []byte) (string, bool) {
		if len(b) != 4 {
			return "", false
		}
		v := binary.NativeEndian.Uint32(b)
		var parts []string
		for _, f := range names {
			if v&f.bit != 0 {
				parts = append(parts, f.name)
				v &^= f.bit
			}
		}
		if v != 0 || len(parts) == 0 {
			return "", false
		}
		return strings.Join(parts, ","), true
	}
}

// fibTypes are the route types (RTN_*) as nft names them.
var fibTypes = []string{"unspec", "unicast", "local", "broadcast", "anycast", "multicast",
	"blackhole", "unreachable", "prohibit"}

func parseFibType(s string) ([]byte, error) {
	for i, name := range fibTypes {
		if name == s {
			return binary.NativeEndian.AppendUint32(nil, uint32(i)), nil
		}
	}
	return nil, fmt.Errorf("unknown address type %q", s)
}

func formatFibType(b []byte) (string, bool) {
	if len(b) != 4 {
		return "", false
	}
	v := binary.NativeEndian.Uint32(b)
	if int(v) < len(fibTypes) {
		return fibTypes[v], true
	}
	return "", false
}

// parseIfname reads a quoted interface name; a trailing "*" matches a
// prefix, which nft compares without the NUL terminator.
func parseIfname(s string) ([]byte, error) {
	name, err := strconv.Unquote(s)
	if err != nil || !strings.HasPrefix(s, `"`) || len(name) == 0 || len(name) >= 16 {
		return nil, fmt.Errorf("want a quoted interface name of 1 to 15 bytes")
	}
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return []byte(prefix), nil
	}
	b := make([]byte, 16)
	copy(b, name)
	return b, nil
}

// formatIfname prints a full (NUL-padded) name or a prefix with "*".
func formatIfname(b []byte) (string, bool) {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		for _, c := range b[i:] {
			if c != 0 {
				return "", false
			}
		}
		return `"` + string(b[:i]) + `"`, i > 0
	}
	if len(b) == 16 {
		return "", false
	}
	return `"` + string(b) + `*"`, len(b) > 0
}
