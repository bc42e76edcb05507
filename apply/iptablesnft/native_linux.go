package iptablesnft

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// test is what iptables-nft writes for one native match: a load of a
// packet field into a register, an optional mask of it, and a comparison
// for equality or inequality.
type test struct {
	meta   bool   // a meta load (key) rather than a payload load (base, offset)
	key    uint32 // meta key
	base   uint32 // payload base
	offset uint32
	length int
	mask   []byte // nil without a bitwise
	not    bool
	data   []byte
}

// readTest reads a load, an optional bitwise and a cmp from the front of
// exprs and returns the test and how many expressions it took.
func readTest(exprs []nftables.RawExpr) (test, int, error) {
	var t test
	load, err := nfnl.ParseAttrs(exprs[0].Data)
	if err != nil {
		return t, 0, err
	}
	reg, okReg := load.U32(unix.NFTA_PAYLOAD_DREG) // the same number as NFTA_META_DREG
	if exprs[0].Name == "meta" {
		t.meta = true
		k, ok := load.U32(unix.NFTA_META_KEY)
		if !ok || !okReg {
			return t, 0, unknown("a meta load without key or register")
		}
		t.key = k
	} else {
		base, ok1 := load.U32(unix.NFTA_PAYLOAD_BASE)
		off, ok2 := load.U32(unix.NFTA_PAYLOAD_OFFSET)
		l, ok3 := load.U32(unix.NFTA_PAYLOAD_LEN)
		if !ok1 || !ok2 || !ok3 || !okReg || l == 0 || l > 16 {
			return t, 0, unknown("a payload load of an unknown form")
		}
		t.base, t.offset, t.length = base, off, int(l)
	}
	n := 1
	if n < len(exprs) && exprs[n].Name == "bitwise" {
		mask, err := readMask(exprs[n], reg)
		if err != nil {
			return t, 0, err
		}
		t.mask = mask
		n++
	}
	if n >= len(exprs) || exprs[n].Name != "cmp" {
		return t, 0, unknown("a load that no comparison follows")
	}
	if err := t.readCmp(exprs[n], reg); err != nil {
		return t, 0, err
	}
	if t.meta {
		t.length = len(t.data)
	}
	if len(t.data) != t.length || (t.mask != nil && len(t.mask) != t.length) {
		return t, 0, unknown("a comparison of another length than its load")
	}
	return t, n + 1, nil
}

// readMask reads "reg = (reg & mask) ^ 0", iptables-nft's only bitwise.
func readMask(e nftables.RawExpr, reg uint32) ([]byte, error) {
	a, err := nfnl.ParseAttrs(e.Data)
	if err != nil {
		return nil, err
	}
	sreg, ok1 := a.U32(unix.NFTA_BITWISE_SREG)
	dreg, ok2 := a.U32(unix.NFTA_BITWISE_DREG)
	mask, ok3 := dataValue(a, unix.NFTA_BITWISE_MASK)
	xor, ok4 := dataValue(a, unix.NFTA_BITWISE_XOR)
	op, hasOp := a.U32(nfnl.NFTA_BITWISE_OP)
	if !ok1 || !ok2 || !ok3 || !ok4 || sreg != reg || dreg != reg || (hasOp && op != unix.NFT_BITWISE_BOOL) ||
		len(xor) != len(mask) || bytes.Count(xor, []byte{0}) != len(xor) {
		return nil, unknown("a bitwise other than a mask")
	}
	return mask, nil
}

func (t *test) readCmp(e nftables.RawExpr, reg uint32) error {
	a, err := nfnl.ParseAttrs(e.Data)
	if err != nil {
		return err
	}
	sreg, ok1 := a.U32(unix.NFTA_CMP_SREG)
	op, ok2 := a.U32(unix.NFTA_CMP_OP)
	data, ok3 := dataValue(a, unix.NFTA_CMP_DATA)
	if !ok1 || !ok2 || !ok3 || sreg != reg || (op != unix.NFT_CMP_EQ && op != unix.NFT_CMP_NEQ) {
		return unknown("a comparison other than == or !=")
	}
	t.not, t.data = op == unix.NFT_CMP_NEQ, data
	return nil
}

// dataValue reads the NFTA_DATA_VALUE nested in attribute typ.
func dataValue(a nfnl.Attrs, typ uint16) ([]byte, bool) {
	v, err := nfnl.DataValue(a[typ])
	return v, err == nil
}

// prefix reads an address test of the network header, at the offsets of
// the source or destination address of a family with addresses of size
// bytes: iptables-nft loads only the bytes a prefix covers, and masks the
// last one when the prefix does not end on a byte.
func (t test) prefix(size int) (netip.Prefix, error) {
	if t.length > size {
		return netip.Prefix{}, unknown("an address test longer than an address")
	}
	addr := make([]byte, size)
	copy(addr, t.data)
	ones := 8 * t.length
	if t.mask != nil {
		var err error
		if ones, err = prefixLen(t.mask); err != nil {
			return netip.Prefix{}, err
		}
		for i, m := range t.mask {
			if t.data[i]&^m != 0 {
				return netip.Prefix{}, unknown("an address with bits outside its mask")
			}
		}
	}
	// iptables-nft-save leaves out a test of no bits at all.
	if ones == 0 {
		return netip.Prefix{}, unknown("an address test of no bits")
	}
	a, _ := netip.AddrFromSlice(addr)
	if a.Is6() && !ipv6PrintsAsGo(a) {
		return netip.Prefix{}, unknown("an IPv6 address inet_ntop prints with an IPv4 tail")
	}
	return netip.PrefixFrom(a, ones), nil
}

// prefixLen returns the length of a mask that is a prefix: ones, then
// zeros, across its bytes.
func prefixLen(mask []byte) (int, error) {
	ones, total := 0, 0
	for _, m := range mask {
		if ones == total*8 {
			ones += bits.LeadingZeros8(^m)
		}
		total++
		if bits.OnesCount(uint(m)) != max(0, min(8, ones-(total-1)*8)) {
			return 0, unknown("an address mask that is not a prefix")
		}
	}
	return ones, nil
}

// ipv6PrintsAsGo reports whether glibc's inet_ntop and Go spell a the same
// way: they differ only for "::a.b.c.d", which glibc writes with an IPv4
// tail (the first 96 bits zero, the next 16 not).
func ipv6PrintsAsGo(a netip.Addr) bool {
	b := a.As16()
	for _, x := range b[:12] {
		if x != 0 {
			return true
		}
	}
	return b[12] == 0 && b[13] == 0
}

// ifaceName reads an interface test: the name with its NUL for an exact
// name, or without one for a prefix, which iptables spells with a "+".
func (t test) ifaceName() (string, error) {
	d := t.data
	if t.mask != nil || len(d) == 0 || len(d) > 16 {
		return "", unknown("an interface test of an unknown form")
	}
	if i := bytes.IndexByte(d, 0); i >= 0 {
		if i != len(d)-1 || i == 0 {
			return "", unknown("an interface name with a NUL inside")
		}
		// iptables-nft writes "! -i +" (no interface at all) as an
		// equality with this name, which iptables-nft-save turns back.
		if string(d[:i]) == "INVAL/D" {
			return "", unknown("the interface name iptables-nft writes for \"! -i +\"")
		}
		return string(d[:i]), nil
	}
	return string(d) + "+", nil
}

// mark reads "-m mark --mark VALUE[/MASK]": the mark's value and mask are
// host-order words.
func (t test) markText() (string, error) {
	if len(t.data) != 4 {
		return "", unknown("a mark test of %d bytes", len(t.data))
	}
	value, mask := binary.NativeEndian.Uint32(t.data), uint32(0xffffffff)
	if t.mask != nil {
		mask = binary.NativeEndian.Uint32(t.mask)
	}
	return markText(t.not, value, mask), nil
}

// markText is libxt_mark's save of a match.
func markText(not bool, value, mask uint32) string {
	s := "--mark 0x" + strconv.FormatUint(uint64(value), 16)
	if mask != 0xffffffff {
		s += "/0x" + strconv.FormatUint(uint64(mask), 16)
	}
	if not {
		s = "! " + s
	}
	return s
}

// portText is libxt_tcp's and libxt_udp's save of one port option.
func portText(opt string, not bool, lo, hi uint16) string {
	if lo == 0 && hi == 0xffff {
		return ""
	}
	s := " " + opt + " " + strconv.Itoa(int(lo))
	if lo != hi {
		s += ":" + strconv.Itoa(int(hi))
	}
	if not {
		s = " !" + s
	}
	return s
}

// unknown is an ErrUnknown with a reason.
func unknown(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnknown}, args...)...)
}
