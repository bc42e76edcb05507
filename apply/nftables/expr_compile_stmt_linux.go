package nftables

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// natFlags reads "random", "fully-random" and "persistent", alone or
// comma-separated, after masquerade or a NAT target.
func (c *ruleCompiler) natFlags() (expr.NAT, error) {
	var n expr.NAT
	if c.ts.done() {
		return n, nil
	}
	w := c.ts.peekWord()
	for f := range strings.SplitSeq(w, ",") {
		switch f {
		case "random":
			n.Random = true
		case "fully-random":
			n.FullyRandom = true
		case "persistent":
			n.Persistent = true
		default:
			return expr.NAT{}, nil // not flags: the next statement
		}
	}
	c.ts.next()
	return n, nil
}

// dnat compiles "dnat to ADDR[:PORT]", "dnat to [V6]:PORT",
// "dnat ip to <operand> map { k : addr . port, ... }" and
// "dnat ip to <operand> map @name".
func (c *ruleCompiler) dnat() error {
	c.ts.next()
	famWord := ""
	if w := c.ts.peekWord(); w == "ip" || w == "ip6" {
		famWord = w
		c.ts.next()
	}
	if !c.ts.accept("to") {
		return c.errorf("want dnat [ip|ip6] to")
	}
	addrType, natFamily := typeIPv4, uint32(unix.NFPROTO_IPV4)
	if c.family == unix.NFPROTO_IPV6 {
		addrType, natFamily = typeIPv6, unix.NFPROTO_IPV6
	}
	nat := &expr.NAT{Type: expr.NATTypeDestNAT, Family: natFamily, RegAddrMin: reg1}
	words := c.ts.words()
	if len(words) > 0 && (words[0] == "numgen" || fieldOrNil(words, c.family) != nil) {
		if famWord != familyWord(natFamily) {
			return c.errorf("a dnat map needs the table's family after dnat")
		}
		if err := c.dnatMap(addrType); err != nil {
			return err
		}
		nat.RegProtoMin = wordReg(addrType.len / 4)
	} else {
		if famWord != "" {
			return c.errorf("unsupported dnat %s to an address", famWord)
		}
		addr, port, err := parseAddrPort(c.ts.next().text, addrType)
		if err != nil {
			return c.errorf("%v", err)
		}
		c.emit(&expr.Immediate{Register: reg1, Data: addr})
		if port != nil {
			c.emit(&expr.Immediate{Register: reg2, Data: port})
			nat.RegProtoMin, nat.Specified = reg2, true
		}
	}
	flags, err := c.natFlags()
	if err != nil {
		return err
	}
	nat.Random, nat.FullyRandom, nat.Persistent = flags.Random, flags.FullyRandom, flags.Persistent
	c.emit(nat)
	return nil
}

func fieldOrNil(words []string, family byte) *field {
	f, _ := fieldByName(words, family)
	return f
}

// dnatMap compiles "<operand> map { k : addr . port, ... }" into a lookup
// in an anonymous map whose value lands in the NAT registers, and
// "<operand> map @name" into a lookup in a named one.
func (c *ruleCompiler) dnatMap(addrType *dataType) error {
	parts, err := c.operand()
	if err != nil {
		return err
	}
	c.loadParts(parts)
	t := c.ts.next()
	if t.text != "map" {
		return c.errorf("want map { ... }")
	}
	t = c.ts.next()
	l := &expr.Lookup{SourceRegister: reg1, DestRegister: reg1, IsDestRegSet: true}
	if name, ok := strings.CutPrefix(t.text, "@"); ok && !t.brace && name != "" {
		// A named map: its declaration gives the types.
		l.SetName = name
		c.emit(l)
		return nil
	}
	if !t.brace {
		return c.errorf("want map { ... } or map @name")
	}
	as := &anonSet{info: setInfo{key: partsType(parts), data: setType{addrType, typeService}}, lookup: l}
	if as.elems, err = mapElements(as, t.text); err != nil {
		return c.errorf("%v", err)
	}
	c.out.anon = append(c.out.anon, as)
	c.emit(l)
	return nil
}

// parseAddrPort reads "10.0.0.1", "10.0.0.1:80", "fd00::1" or "[fd00::1]:80".
func parseAddrPort(s string, t *dataType) (addr, port []byte, err error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Addr().BitLen() != t.len*8 {
			return nil, nil, errBadNATAddr(s)
		}
		return ap.Addr().AsSlice(), binary.BigEndian.AppendUint16(nil, ap.Port()), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.BitLen() != t.len*8 || a.Zone() != "" {
		return nil, nil, errBadNATAddr(s)
	}
	return a.AsSlice(), nil, nil
}

type errBadNATAddr string

func (e errBadNATAddr) Error() string { return "bad NAT address " + strconv.Quote(string(e)) }

// dynset compiles "update @set { <field> [timeout T] }" (and "add").
func (c *ruleCompiler) dynset() error {
	op := uint32(unix.NFT_DYNSET_OP_ADD)
	if c.ts.next().text == "update" {
		op = unix.NFT_DYNSET_OP_UPDATE
	}
	name, ok := strings.CutPrefix(c.ts.next().text, "@")
	t := c.ts.next()
	if !ok || !t.brace {
		return c.errorf("want @set { key }")
	}
	inner, err := tokenize(t.text)
	if err != nil {
		return err
	}
	sub := &ruleCompiler{ts: tokenStream{toks: inner}, family: c.family}
	parts, err := sub.operand()
	if err != nil {
		return err
	}
	d := &expr.Dynset{SrcRegKey: reg1, SetName: name, Operation: op}
	if sub.ts.accept("timeout") {
		if d.Timeout, err = nft.ParseDuration(sub.ts.next().text); err != nil {
			return c.errorf("bad timeout")
		}
	}
	if !sub.ts.done() {
		return c.errorf("unsupported set key")
	}
	c.loadParts(parts)
	c.emit(d)
	return nil
}

// markSet compiles "meta mark set meta mark | V" (also ^ and &) and
// "meta mark set V".
func (c *ruleCompiler) markSet() error {
	c.ts.pos += 3
	words := c.ts.words()
	set := &expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1}
	if _, ok := hasPhrase(words, "meta mark"); !ok {
		v, err := typeMark.parse(c.ts.next().text)
		if err != nil {
			return c.errorf("bad mark: %v", err)
		}
		c.emit(&expr.Immediate{Register: reg1, Data: v}, set)
		return nil
	}
	c.ts.pos += 2
	op := c.ts.next().text
	v, err := typeMark.parse(c.ts.next().text)
	if err != nil {
		return c.errorf("bad mark: %v", err)
	}
	x := binary.NativeEndian.Uint32(v)
	var mask, xor uint32
	switch op {
	case "|":
		mask, xor = ^x, x
	case "^":
		mask, xor = 0xffffffff, x
	case "&":
		mask, xor = x, 0
	default:
		return c.errorf("unsupported mark operation")
	}
	c.emit(&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, mask), Xor: binary.NativeEndian.AppendUint32(nil, xor)},
		set)
	return nil
}

// familyWord is nft's word for a NAT family: "ip" or "ip6".
func familyWord(natFamily uint32) string {
	if natFamily == unix.NFPROTO_IPV6 {
		return "ip6"
	}
	return "ip"
}
