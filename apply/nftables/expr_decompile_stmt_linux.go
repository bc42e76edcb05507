package nftables

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

func (d *decompiler) lookup(l *expr.Lookup) error {
	ls, err := d.take(l.SourceRegister)
	if err != nil {
		return err
	}
	if err := fullLoads(ls); err != nil {
		return err
	}
	lhs := operandText(ls)
	rhs := "@" + l.SetName
	var info *setInfo
	var elems []rawElem
	anon := false
	if d.anon != nil {
		info, elems, anon = d.anon(l.SetName)
	}
	if anon {
		if !setTypeEqual(info.key, operandType(ls)) {
			return fmt.Errorf("anonymous set %s has key type %s, not %s", l.SetName, info.key, operandType(ls))
		}
		rhs = anonSetText(info, elems)
	}
	switch {
	case !l.IsDestRegSet:
		d.emit(lhs + negText(l.Invert) + rhs)
	case l.Invert:
		return fmt.Errorf("inverted map lookup")
	case l.DestRegister == regVerdict:
		d.emit(lhs + " vmap " + rhs)
	case !anon:
		// A named map: nat checks the register use, the set's own
		// declaration says what it holds.
		d.mapped = &mappedValue{text: lhs + " map " + rhs, reg: l.DestRegister}
	default:
		if info.data == nil {
			return fmt.Errorf("map lookup into a register")
		}
		d.mapped = &mappedValue{text: lhs + " map " + rhs, reg: l.DestRegister, data: info.data}
	}
	return nil
}

// fullLoads checks that a set key is made of whole, unmasked fields.
func fullLoads(ls []loaded) error {
	for _, l := range ls {
		if l.mask != nil || l.n != l.f.typ.len {
			return fmt.Errorf("masked or partial %s as a set key", l.f.name)
		}
	}
	return nil
}

func setTypeEqual(a, b setType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].magic != b[i].magic {
			return false
		}
	}
	return true
}

// anonSetText prints an anonymous set or map as nft lists it in a rule,
// its elements in the package's canonical order.
func anonSetText(info *setInfo, elems []rawElem) string {
	s := &nft.Set{Type: info.key.String(), Elements: info.decodeElements(elems)}
	if info.data != nil {
		s.DataType = info.data.String()
	}
	s.SortElements()
	items := make([]string, len(s.Elements))
	for i, e := range s.Elements {
		items[i] = e.Key
		if e.Value != "" {
			items[i] += " : " + e.Value
		}
	}
	return "{ " + strings.Join(items, ", ") + " }"
}

// markSet prints "meta mark set meta mark | V" (and ^, &) or "meta mark set V".
func (d *decompiler) markSet(m *expr.Meta) error {
	if m.Key != expr.MetaKeyMARK {
		return fmt.Errorf("unsupported meta set")
	}
	if v, ok := d.imm[m.Register]; ok && len(d.pending) == 0 {
		delete(d.imm, m.Register)
		s, ok := typeMark.format(v)
		if !ok || len(v) != 4 {
			return fmt.Errorf("bad mark")
		}
		d.emit("meta mark set " + s)
		return nil
	}
	ls, err := d.take(m.Register)
	if err != nil {
		return err
	}
	l := ls[0]
	if len(ls) != 1 || l.f.typ != typeMark || l.mask == nil {
		return fmt.Errorf("unsupported meta mark set")
	}
	mask, xor := binary.NativeEndian.Uint32(l.mask), binary.NativeEndian.Uint32(l.xor)
	var text string
	switch {
	case mask == ^xor:
		text = fmt.Sprintf("| 0x%08x", xor)
	case mask == 0xffffffff:
		text = fmt.Sprintf("^ 0x%08x", xor)
	case xor == 0:
		text = fmt.Sprintf("& 0x%08x", mask)
	default:
		return fmt.Errorf("unsupported mark arithmetic")
	}
	d.emit("meta mark set meta mark " + text)
	return nil
}

// nat prints a DNAT to an address (and port), or to a map's value. The
// kernel fills in RegAddrMax, RegProtoMax and the proto-specified flag,
// also for rules nft writes, so equal maxima and that flag are ignored.
func (d *decompiler) nat(n *expr.NAT) error {
	addrType, famWord := typeIPv4, "ip"
	if d.family == unix.NFPROTO_IPV6 {
		addrType, famWord = typeIPv6, "ip6"
	}
	if n.Type != expr.NATTypeDestNAT || n.Family != uint32(d.family) || n.Prefix || n.RegAddrMin == 0 ||
		(n.RegAddrMax != 0 && n.RegAddrMax != n.RegAddrMin) || (n.RegProtoMax != 0 && n.RegProtoMax != n.RegProtoMin) {
		return fmt.Errorf("unsupported nat")
	}
	flags := natFlagsText(n.Random, n.FullyRandom, n.Persistent)
	if m := d.mapped; m != nil {
		d.mapped = nil
		wantProto := wordReg(regWord(m.reg) + addrType.len/4)
		if n.RegAddrMin != m.reg || n.RegProtoMin != wantProto || (m.data != nil && !setTypeEqual(m.data, setType{addrType, typeService})) {
			return fmt.Errorf("unsupported nat from a map")
		}
		d.emit("dnat " + famWord + " to " + m.text + flags)
		return nil
	}
	addr, ok := d.imm[n.RegAddrMin]
	a, valid := netip.AddrFromSlice(addr)
	if !ok || !valid || a.BitLen() != addrType.len*8 {
		return fmt.Errorf("unsupported nat address")
	}
	delete(d.imm, n.RegAddrMin)
	target := a.String()
	if n.RegProtoMin != 0 {
		port, ok := d.imm[n.RegProtoMin]
		if !ok || len(port) != 2 {
			return fmt.Errorf("unsupported nat port")
		}
		delete(d.imm, n.RegProtoMin)
		target = netip.AddrPortFrom(a, binary.BigEndian.Uint16(port)).String()
	}
	d.emit("dnat to " + target + flags)
	return nil
}

func natFlagsText(random, fully, persistent bool) string {
	var fs []string
	if random {
		fs = append(fs, "random")
	}
	if fully {
		fs = append(fs, "fully-random")
	}
	if persistent {
		fs = append(fs, "persistent")
	}
	if len(fs) == 0 {
		return ""
	}
	return " " + strings.Join(fs, ",")
}

// reject prints nft's default reject: ICMP (or ICMPv6) port unreachable.
func (d *decompiler) reject(r *expr.Reject) error {
	code := uint8(icmpPortUnreach)
	if d.family == unix.NFPROTO_IPV6 {
		code = icmpv6PortUnreach
	}
	if r.Type != unix.NFT_REJECT_ICMP_UNREACH || r.Code != code {
		return fmt.Errorf("unsupported reject type %d code %d", r.Type, r.Code)
	}
	d.emit("reject")
	return nil
}

func (d *decompiler) dynset(s *expr.Dynset) error {
	var op string
	switch s.Operation {
	case unix.NFT_DYNSET_OP_ADD:
		op = "add"
	case unix.NFT_DYNSET_OP_UPDATE:
		op = "update"
	default:
		return fmt.Errorf("unsupported set operation")
	}
	if s.SrcRegData != 0 || s.Invert || len(s.Exprs) > 0 {
		return fmt.Errorf("unsupported dynamic set update")
	}
	ls, err := d.take(s.SrcRegKey)
	if err != nil {
		return err
	}
	if err := fullLoads(ls); err != nil {
		return err
	}
	key := operandText(ls)
	if s.Timeout != 0 {
		key += " timeout " + nft.FormatDuration(s.Timeout)
	}
	d.emit(op + " @" + s.SetName + " { " + key + " }")
	return nil
}
