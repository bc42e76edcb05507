package nftables

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// UnsupportedPrefix starts the text of a rule whose expressions the
// decompiler does not know. No rendered rule starts with it, so such a
// rule (a hand edit, another tool's rule) always shows up as drift.
const UnsupportedPrefix = "# unsupported expression: "

// anonSource returns an anonymous set of the table by name, with its
// elements; ok is false for a named set.
type anonSource func(name string) (info *setInfo, elems []rawElem, ok bool)

// decompileRule prints a rule's expressions (and its comment, from its
// userdata) exactly as nft 1.0.6 lists them, for the shapes compileRule
// generates and nft writes for the same text. Anything else decodes to a
// text that starts with UnsupportedPrefix.
func decompileRule(family byte, exprs []expr.Any, udata []byte, anon anonSource) (out nft.Rule) {
	d := &decompiler{family: family, anon: anon, imm: map[uint32][]byte{}}
	// The kernel hands back what was written, by anyone: a shape this
	// decoder has not foreseen must read as drift, never crash a plan.
	defer func() {
		if r := recover(); r != nil {
			out = oneLine(d.unsupported(fmt.Errorf("undecodable: %v", r), nil))
		}
	}()
	for _, e := range exprs {
		if err := d.step(e); err != nil {
			return oneLine(d.unsupported(err, e))
		}
	}
	if err := d.finish(); err != nil {
		return oneLine(d.unsupported(err, nil))
	}
	text := strings.Join(d.out, " ")
	if c, ok := udataGet(udata, udataComment); ok {
		text += ` comment "` + nfnl.CString(c) + `"`
	}
	return oneLine(nft.Rule(text))
}

// oneLine keeps a decoded rule on one printable line. A set name or a
// comment holding a control character (only a hand edit can put one
// there) makes the rule read as unsupported, quoted, so that it can
// neither equal a render nor forge lines of a plan.
func oneLine(r nft.Rule) nft.Rule {
	if !strings.ContainsFunc(string(r), func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return r
	}
	return nft.Rule(UnsupportedPrefix + "control characters in " + strconv.Quote(strings.TrimPrefix(string(r), UnsupportedPrefix)))
}

// loaded is a field loaded into a register, maybe masked by a bitwise.
type loaded struct {
	f         *field
	reg       uint32
	n         int // bytes loaded; fewer than the field's size for a prefix
	mask, xor []byte
}

// mappedValue is a lookup whose value (an address and port) awaits NAT.
type mappedValue struct {
	text string // "numgen random mod 2 map { 0 : 10.0.0.1 . 80 }"
	reg  uint32
	data setType // an anonymous map's data; nil for a named map
}

type decompiler struct {
	family  byte
	anon    anonSource
	out     []string
	pending []loaded
	imm     map[uint32][]byte
	mapped  *mappedValue
}

func (d *decompiler) unsupported(err error, e expr.Any) nft.Rule {
	s := UnsupportedPrefix
	switch e := e.(type) {
	case nil:
	case *unknownExpr:
		s += e.name + " "
	default:
		s += strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", e), "*expr.")) + " " +
			strings.TrimPrefix(fmt.Sprintf("%+v", e), "&") + " "
	}
	s += err.Error()
	if len(d.out) > 0 {
		s += ", after: " + strings.Join(d.out, " ")
	}
	return nft.Rule(s)
}

func (d *decompiler) emit(s string) { d.out = append(d.out, s) }

func (d *decompiler) finish() error {
	switch {
	case len(d.pending) > 0:
		return fmt.Errorf("%s loaded but not used", d.pending[0].f.name)
	case d.mapped != nil:
		return fmt.Errorf("map value not used")
	case len(d.imm) > 0:
		return fmt.Errorf("immediate value not used")
	}
	return nil
}

func (d *decompiler) step(e expr.Any) error {
	switch e := e.(type) {
	case *unknownExpr:
		return errors.New(e.reason)
	case *expr.Numgen:
		if e.Type != unix.NFT_NG_RANDOM || e.Modulus == 0 {
			return fmt.Errorf("unsupported numgen")
		}
		d.pending = append(d.pending, loaded{f: numgenField(e.Modulus, e.Offset), reg: e.Register, n: 4})
		return nil
	case *expr.Bitwise:
		return d.bitwise(e)
	case *expr.Cmp:
		return d.cmp(e)
	case *expr.Lookup:
		return d.lookup(e)
	case *expr.Immediate:
		if e.Register == regVerdict || d.imm[e.Register] != nil {
			return fmt.Errorf("unsupported immediate")
		}
		d.imm[e.Register] = e.Data
		return nil
	case *expr.Meta:
		if e.SourceRegister {
			return d.markSet(e)
		}
	case *expr.NAT:
		return d.nat(e)
	case *expr.Masq:
		if e.ToPorts {
			return fmt.Errorf("unsupported masquerade to ports")
		}
		d.emit("masquerade" + natFlagsText(e.Random, e.FullyRandom, e.Persistent))
		return nil
	case *expr.Reject:
		return d.reject(e)
	case *expr.Dynset:
		return d.dynset(e)
	case *expr.Verdict:
		v := formatVerdict(e)
		if strings.HasPrefix(v, "#") {
			return fmt.Errorf("unsupported verdict")
		}
		d.emit(v)
		return nil
	}
	f, reg, n, ok := fieldOf(e, d.family)
	if !ok {
		return fmt.Errorf("(not a shape this codec reads)")
	}
	d.pending = append(d.pending, loaded{f: f, reg: reg, n: n})
	return nil
}

// take removes and returns the pending loads; a concatenation must sit
// in the registers nft uses for it.
func (d *decompiler) take(reg uint32) ([]loaded, error) {
	ls := d.pending
	d.pending = nil
	if len(ls) == 0 {
		return nil, fmt.Errorf("nothing loaded")
	}
	parts := make([]*field, len(ls))
	for i, l := range ls {
		parts[i] = l.f
		if l.n != l.f.typ.len && len(ls) > 1 {
			return nil, fmt.Errorf("partial load in a concatenation")
		}
	}
	want := concatRegisters(parts)
	if len(ls) == 1 {
		want[0] = ls[0].reg // a single load may use any register
	}
	for i, l := range ls {
		if l.reg != want[i] || (i > 0 && l.mask != nil) {
			return nil, fmt.Errorf("unexpected registers")
		}
	}
	if ls[0].reg != reg {
		return nil, fmt.Errorf("register %d read, %d loaded", reg, ls[0].reg)
	}
	return ls, nil
}

func operandText(ls []loaded) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.f.name
	}
	return strings.Join(names, " . ")
}

func operandType(ls []loaded) setType {
	st := make(setType, len(ls))
	for i, l := range ls {
		st[i] = l.f.typ
	}
	return st
}

func (d *decompiler) bitwise(b *expr.Bitwise) error {
	n := len(d.pending)
	if n == 0 {
		return fmt.Errorf("bitwise on nothing")
	}
	l := &d.pending[n-1]
	if b.SourceRegister != l.reg || b.DestRegister != l.reg || l.mask != nil ||
		int(b.Len) != l.n || len(b.Mask) != l.n || len(b.Xor) != l.n {
		return fmt.Errorf("unsupported bitwise")
	}
	l.mask, l.xor = b.Mask, b.Xor
	return nil
}

func (d *decompiler) cmp(c *expr.Cmp) error {
	ls, err := d.take(c.Register)
	if err != nil {
		return err
	}
	if len(ls) != 1 || (c.Op != expr.CmpOpEq && c.Op != expr.CmpOpNeq) {
		return fmt.Errorf("unsupported comparison")
	}
	l := ls[0]
	neg := c.Op == expr.CmpOpNeq
	t := l.f.typ
	isAddr := t == typeIPv4 || t == typeIPv6
	zero := func(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }
	switch {
	case l.mask != nil && (t == typeCtState || t == typeCtStatus):
		flags, ok := t.format(l.mask)
		if !ok || !zero(l.xor) || len(c.Data) != 4 || !zero(c.Data) {
			return fmt.Errorf("unsupported %s test", l.f.name)
		}
		d.emit(l.f.name + negText(!neg) + flags)
	case l.mask != nil && t == typeMark:
		m, _ := t.format(l.mask)
		v, ok := t.format(c.Data)
		if !ok || !zero(l.xor) || len(c.Data) != 4 {
			return fmt.Errorf("unsupported mark test")
		}
		op := " == "
		if neg {
			op = " != "
		}
		d.emit(l.f.name + " & " + m + op + v)
	case l.mask != nil && isAddr:
		bits, ok := maskBits(l.mask)
		if !ok || !zero(l.xor) || len(c.Data) != t.len {
			return fmt.Errorf("unsupported address mask")
		}
		return d.emitPrefix(l.f, neg, c.Data, bits)
	case l.mask != nil:
		return fmt.Errorf("unsupported bitwise on %s", l.f.name)
	case isAddr && l.n < t.len:
		if len(c.Data) != l.n {
			return fmt.Errorf("unsupported prefix comparison")
		}
		return d.emitPrefix(l.f, neg, append(bytes.Clone(c.Data), make([]byte, t.len-l.n)...), l.n*8)
	default:
		if len(c.Data) != t.len && t != typeIfname {
			return fmt.Errorf("unsupported %s comparison", l.f.name)
		}
		v, ok := t.format(c.Data)
		if !ok {
			return fmt.Errorf("unprintable %s value", l.f.name)
		}
		d.emit(l.f.name + negText(neg) + v)
	}
	return nil
}

func negText(neg bool) string {
	if neg {
		return " != "
	}
	return " "
}

func (d *decompiler) emitPrefix(f *field, neg bool, addr []byte, bits int) error {
	a, _ := netip.AddrFromSlice(addr)
	p := netip.PrefixFrom(a, bits)
	if p.Masked() != p {
		return fmt.Errorf("address has bits outside its prefix")
	}
	d.emit(f.name + negText(neg) + formatSpan(span{a, lastAddr(p)}))
	return nil
}

// maskBits returns the prefix length of a network mask.
func maskBits(m []byte) (int, bool) {
	bits := 0
	for bits < len(m)*8 && m[bits/8]&(0x80>>(bits%8)) != 0 {
		bits++
	}
	return bits, bytes.Equal(m, prefixMask(bits, len(m)))
}
