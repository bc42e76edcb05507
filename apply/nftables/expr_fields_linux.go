package nftables

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// field is something a rule loads into a register: a packet header field,
// packet metadata, conntrack state or a route lookup, with its nft name
// and data type.
type field struct {
	name   string // as nft prints it: "ip saddr", "meta l4proto"
	family byte   // the table family it belongs to; 0 for any
	typ    *dataType
	load   func(reg uint32) expr.Any
	// match reports whether e loads this field. For an address it also
	// accepts a load of the first n bytes (nft's byte-aligned prefix
	// match) and returns n; else it returns the full length.
	match func(e expr.Any) (n int, ok bool)
}

// fields are the fields the codec knows, as kube-proxy's rules use them.
var fields = []*field{
	payloadField("ip saddr", unix.NFPROTO_IPV4, typeIPv4, expr.PayloadBaseNetworkHeader, 12),
	payloadField("ip daddr", unix.NFPROTO_IPV4, typeIPv4, expr.PayloadBaseNetworkHeader, 16),
	payloadField("ip6 saddr", unix.NFPROTO_IPV6, typeIPv6, expr.PayloadBaseNetworkHeader, 8),
	payloadField("ip6 daddr", unix.NFPROTO_IPV6, typeIPv6, expr.PayloadBaseNetworkHeader, 24),
	payloadField("th sport", 0, typeService, expr.PayloadBaseTransportHeader, 0),
	payloadField("th dport", 0, typeService, expr.PayloadBaseTransportHeader, 2),
	metaField("meta l4proto", typeInetProto, expr.MetaKeyL4PROTO),
	metaField("meta mark", typeMark, expr.MetaKeyMARK),
	metaField("iifname", typeIfname, expr.MetaKeyIIFNAME),
	metaField("oifname", typeIfname, expr.MetaKeyOIFNAME),
	ctField("ct state", typeCtState, expr.CtKeySTATE),
	ctField("ct status", typeCtStatus, expr.CtKeySTATUS),
	fibField("fib saddr type", true),
	fibField("fib daddr type", false),
}

func payloadField(name string, family byte, t *dataType, base expr.PayloadBase, offset uint32) *field {
	return &field{
		name: name, family: family, typ: t,
		load: func(reg uint32) expr.Any {
			return &expr.Payload{DestRegister: reg, Base: base, Offset: offset, Len: uint32(t.len)}
		},
		match: func(e expr.Any) (int, bool) {
			p, ok := e.(*expr.Payload)
			if !ok || p.OperationType != expr.PayloadLoad || p.Base != base || p.Offset != offset ||
				p.Len == 0 || p.Len > uint32(t.len) {
				return 0, false
			}
			if p.Len < uint32(t.len) && t != typeIPv4 && t != typeIPv6 {
				return 0, false
			}
			return int(p.Len), true
		},
	}
}

func metaField(name string, t *dataType, key expr.MetaKey) *field {
	return &field{
		name: name, typ: t,
		load: func(reg uint32) expr.Any { return &expr.Meta{Key: key, Register: reg} },
		match: func(e expr.Any) (int, bool) {
			m, ok := e.(*expr.Meta)
			return t.len, ok && !m.SourceRegister && m.Key == key
		},
	}
}

func ctField(name string, t *dataType, key expr.CtKey) *field {
	return &field{
		name: name, typ: t,
		load: func(reg uint32) expr.Any { return &expr.Ct{Key: key, Register: reg} },
		match: func(e expr.Any) (int, bool) {
			c, ok := e.(*expr.Ct)
			return t.len, ok && !c.SourceRegister && c.Key == key && c.Direction == 0
		},
	}
}

func fibField(name string, saddr bool) *field {
	return &field{
		name: name, typ: typeFibAddr,
		load: func(reg uint32) expr.Any {
			return &expr.Fib{Register: reg, ResultADDRTYPE: true, FlagSADDR: saddr, FlagDADDR: !saddr}
		},
		match: func(e expr.Any) (int, bool) {
			f, ok := e.(*expr.Fib)
			want := expr.Fib{Register: 0, ResultADDRTYPE: true, FlagSADDR: saddr, FlagDADDR: !saddr}
			if ok {
				got := *f
				got.Register = 0
				ok = got == want
			}
			return typeFibAddr.len, ok
		},
	}
}

// fieldByName returns the field whose name starts words, and how many
// words the name takes.
func fieldByName(words []string, family byte) (*field, int) {
	for _, f := range fields {
		if n, ok := hasPhrase(words, f.name); ok && (f.family == 0 || f.family == family) {
			return f, n
		}
	}
	return nil, 0
}

// fieldOf returns the field e loads, the register and the loaded length.
func fieldOf(e expr.Any, family byte) (*field, uint32, int, bool) {
	for _, f := range fields {
		if f.family != 0 && f.family != family {
			continue
		}
		if n, ok := f.match(e); ok {
			return f, loadRegister(e), n, true
		}
	}
	return nil, 0, 0, false
}

func loadRegister(e expr.Any) uint32 {
	switch e := e.(type) {
	case *expr.Payload:
		return e.DestRegister
	case *expr.Meta:
		return e.Register
	case *expr.Ct:
		return e.Register
	case *expr.Fib:
		return e.Register
	case *expr.Numgen:
		return e.Register
	}
	return 0
}

// Registers: an operand goes to NFT_REG_1; each further part of a
// concatenation goes to the register after the previous part, counted in
// 32-bit words. Like nft and the kernel's dumps, a register that starts on
// a 16-byte boundary is named by its 128-bit number (NFT_REG_1..4), any
// other by its 32-bit number (NFT_REG32_00..15).
const (
	regVerdict = unix.NFT_REG_VERDICT
	reg1       = unix.NFT_REG_1
	reg2       = unix.NFT_REG_2
	reg32First = unix.NFT_REG32_00
)

// regWord returns a register's position in 32-bit words (NFT_REG_1 is
// word 0, like NFT_REG32_00), or -1 for the verdict register.
func regWord(reg uint32) int {
	switch {
	case reg >= unix.NFT_REG_1 && reg <= unix.NFT_REG_4:
		return int(reg-unix.NFT_REG_1) * 4
	case reg >= reg32First && reg <= unix.NFT_REG32_15:
		return int(reg - reg32First)
	}
	return -1
}

// wordReg is the inverse of regWord, in nft's canonical naming.
func wordReg(w int) uint32 {
	if w%4 == 0 {
		return reg1 + uint32(w/4)
	}
	return reg32First + uint32(w)
}

// concatRegisters returns the registers nft loads the parts of a
// concatenation into.
func concatRegisters(parts []*field) []uint32 {
	regs := make([]uint32, len(parts))
	word := 0
	for i, f := range parts {
		regs[i] = wordReg(word)
		word += pad4(f.typ.len) / 4
	}
	return regs
}

// The ICMP codes nft's plain "reject" sends (port unreachable), which
// golang.org/x/sys/unix lacks.
const (
	icmpPortUnreach   = 3 // ICMP_PORT_UNREACH
	icmpv6PortUnreach = 4 // ICMPV6_PORT_UNREACH
)
