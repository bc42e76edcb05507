package nftables

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// compiledRule is a rule text turned into kernel expressions, with the
// anonymous sets its lookups use, which must be created before it.
type compiledRule struct {
	exprs []expr.Any
	anon  []*anonSet
	udata []byte // the comment, as nft stores it
}

// anonSet is an anonymous constant set or map of one rule ("{ ... }" in
// the text). The batch names it and patches its lookup.
type anonSet struct {
	info   setInfo
	elems  []rawElem
	lookup *expr.Lookup
}

// compileRule reads one rule as nft lists it (and render emits it) into
// expressions, as nft 1.0.6 would generate them for a table of family.
func compileRule(family byte, text string) (*compiledRule, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	c := &ruleCompiler{ts: tokenStream{toks: toks}, family: family}
	// A rule of kube-proxy's is at most about ten expressions.
	c.out.exprs = make([]expr.Any, 0, 12)
	for !c.ts.done() {
		if err := c.statement(); err != nil {
			return nil, err
		}
	}
	return &c.out, nil
}

type ruleCompiler struct {
	ts     tokenStream
	family byte
	out    compiledRule
}

func (c *ruleCompiler) emit(es ...expr.Any) { c.out.exprs = append(c.out.exprs, es...) }

func (c *ruleCompiler) errorf(format string, args ...any) error {
	rest := make([]string, 0, len(c.ts.toks))
	for _, t := range c.ts.toks[min(c.ts.pos, len(c.ts.toks)):] {
		if t.brace {
			rest = append(rest, "{ "+t.text+" }")
		} else {
			rest = append(rest, t.text)
		}
	}
	return fmt.Errorf("%s at %q", fmt.Sprintf(format, args...), strings.Join(rest, " "))
}

func (c *ruleCompiler) statement() error {
	switch w := c.ts.peekWord(); w {
	case "comment":
		c.ts.next()
		s, err := strconv.Unquote(c.ts.next().text)
		if err != nil || !c.ts.done() {
			return c.errorf("want one quoted comment at the end")
		}
		c.out.udata = appendUdataString(nil, udataComment, s)
		return nil
	case "accept", "drop", "return", "continue", "jump", "goto":
		c.ts.next()
		v := w
		if w == "jump" || w == "goto" {
			v += " " + c.ts.next().text
		}
		verdict, err := parseVerdict(v)
		if err != nil {
			return c.errorf("%v", err)
		}
		c.emit(verdict)
		return nil
	case "masquerade":
		c.ts.next()
		flags, err := c.natFlags()
		if err != nil {
			return err
		}
		c.emit(&expr.Masq{Random: flags.Random, FullyRandom: flags.FullyRandom, Persistent: flags.Persistent})
		return nil
	case "reject":
		c.ts.next()
		code := uint8(icmpPortUnreach)
		if c.family == unix.NFPROTO_IPV6 {
			code = icmpv6PortUnreach
		}
		c.emit(&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code})
		return nil
	case "dnat":
		return c.dnat()
	case "update", "add":
		return c.dynset()
	}
	words := c.ts.words()
	if _, ok := hasPhrase(words, "meta mark set"); ok {
		return c.markSet()
	}
	return c.match()
}

// operand reads a field or a concatenation of fields ("a . b . c").
func (c *ruleCompiler) operand() ([]*field, error) {
	var parts []*field
	for {
		f, err := c.oneField()
		if err != nil {
			return nil, err
		}
		parts = append(parts, f)
		if !c.ts.accept(".") {
			return parts, nil
		}
	}
}

func (c *ruleCompiler) oneField() (*field, error) {
	words := c.ts.words()
	if _, ok := hasPhrase(words, "numgen random mod"); ok && len(words) >= 4 {
		mod, err := strconv.ParseUint(words[3], 10, 32)
		if err != nil || mod == 0 {
			return nil, c.errorf("bad numgen modulus")
		}
		c.ts.pos += 4
		var offset uint64
		if c.ts.accept("offset") {
			if offset, err = strconv.ParseUint(c.ts.next().text, 10, 32); err != nil {
				return nil, c.errorf("bad numgen offset")
			}
		}
		if offset+mod-1 > math.MaxUint32 {
			return nil, c.errorf("numgen offset %d and modulus %d pass 2^32", offset, mod) // the kernel's EOVERFLOW
		}
		return numgenField(uint32(mod), uint32(offset)), nil
	}
	f, n := fieldByName(words, c.family)
	if f == nil {
		return nil, c.errorf("unsupported expression")
	}
	c.ts.pos += n
	return f, nil
}

// numgenFields holds the numgen fields made so far without an offset,
// by modulus: kube-proxy's layout has one per service chain, and the
// compact layout's cascade one per endpoint of an affinity Service, of a
// few moduli. Moduli above maxCachedModulus are made each time, so that
// the cache stays small whatever the rules say.
var numgenFields sync.Map // uint32 -> *field

const maxCachedModulus = 4096

// numgenField is "numgen random mod N [offset M]", which loads a
// host-endian integer.
func numgenField(mod, offset uint32) *field {
	if offset != 0 || mod > maxCachedModulus {
		return newNumgenField(mod, offset)
	}
	if f, ok := numgenFields.Load(mod); ok {
		return f.(*field)
	}
	f, _ := numgenFields.LoadOrStore(mod, newNumgenField(mod, 0))
	return f.(*field)
}

func newNumgenField(mod, offset uint32) *field {
	name := "numgen random mod " + strconv.FormatUint(uint64(mod), 10)
	if offset != 0 {
		name += " offset " + strconv.FormatUint(uint64(offset), 10)
	}
	return &field{name: name, typ: typeInteger, load: func(reg uint32) expr.Any {
		return &expr.Numgen{Register: reg, Modulus: mod, Type: unix.NFT_NG_RANDOM, Offset: offset}
	}}
}

// loadParts emits the loads of an operand into nft's registers.
func (c *ruleCompiler) loadParts(parts []*field) {
	for i, reg := range concatRegisters(parts) {
		c.emit(parts[i].load(reg))
	}
}

func partsType(parts []*field) setType {
	st := make(setType, len(parts))
	for i, f := range parts {
		st[i] = f.typ
	}
	return st
}

// match compiles "<operand> [!=] <value | @set | { ... }>" and
// "<operand> vmap <@map | { ... }>".
func (c *ruleCompiler) match() error {
	parts, err := c.operand()
	if err != nil {
		return err
	}
	c.loadParts(parts)
	if c.ts.accept("vmap") {
		return c.lookup(parts, true, false)
	}
	if len(parts) == 1 && parts[0].typ == typeMark && c.ts.accept("&") {
		return c.maskedCompare(parts[0])
	}
	neg := c.ts.accept("!=")
	if t := c.ts.peek(); t.brace || strings.HasPrefix(t.text, "@") {
		return c.lookup(parts, false, neg)
	}
	if len(parts) != 1 || c.ts.done() {
		return c.errorf("unsupported match")
	}
	return c.compare(parts[0], c.ts.next().text, neg)
}

// lookup compiles a named or anonymous set or verdict-map lookup.
func (c *ruleCompiler) lookup(parts []*field, vmap, neg bool) error {
	l := &expr.Lookup{SourceRegister: reg1, Invert: neg}
	if vmap {
		l.IsDestRegSet, l.DestRegister = true, regVerdict
	}
	t := c.ts.next()
	if name, ok := strings.CutPrefix(t.text, "@"); ok && !t.brace {
		l.SetName = name
		c.emit(l)
		return nil
	}
	if !t.brace {
		return c.errorf("want @set or { ... }")
	}
	as := &anonSet{info: setInfo{key: partsType(parts)}, lookup: l}
	var err error
	if vmap {
		as.info.data = setType{typeVerdict}
		as.elems, err = mapElements(as, t.text)
	} else {
		as.elems, err = setElements(as, t.text)
	}
	if err != nil {
		return c.errorf("%v", err)
	}
	c.out.anon = append(c.out.anon, as)
	c.emit(l)
	return nil
}

// setElements encodes "{ a, b }": an interval set for addresses (with
// prefixes and ranges), a plain constant set otherwise.
func setElements(as *anonSet, inner string) ([]rawElem, error) {
	items := splitItems(inner)
	if len(as.info.key) == 1 && (as.info.key[0] == typeIPv4 || as.info.key[0] == typeIPv6) {
		spans, err := parseSpans(items, as.info.key[0])
		if err != nil {
			return nil, err
		}
		as.info.interval = true
		return intervalElements(spans), nil
	}
	out := make([]rawElem, len(items))
	for i, it := range items {
		k, err := as.info.key.encodeValue(it)
		if err != nil {
			return nil, err
		}
		out[i] = rawElem{key: k}
	}
	return out, nil
}

// mapElements encodes "{ k : v, ... }" for the map's key and data types.
func mapElements(as *anonSet, inner string) ([]rawElem, error) {
	items := splitItems(inner)
	out := make([]rawElem, len(items))
	for i, it := range items {
		k, v, ok := strings.Cut(it, " : ")
		if !ok {
			return nil, fmt.Errorf("map element %q has no value", it)
		}
		r, err := as.info.encodeElement(nftElement(k, v))
		if err != nil {
			return nil, fmt.Errorf("map element %q: %w", it, err)
		}
		out[i] = r
	}
	return out, nil
}

// compare compiles "<field> [!=] value" as nft does: flags of a bitmask
// type test bits, an address prefix compares the leading bytes (or masks
// them when the prefix is not byte-aligned).
func (c *ruleCompiler) compare(f *field, value string, neg bool) error {
	op := expr.CmpOpEq
	if neg {
		op = expr.CmpOpNeq
	}
	switch {
	case f.typ == typeCtState || f.typ == typeCtStatus:
		bits, err := f.typ.parse(value)
		if err != nil {
			return c.errorf("%v", err)
		}
		zero := make([]byte, 4)
		c.emit(&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: bits, Xor: zero})
		op = expr.CmpOpNeq
		if neg {
			op = expr.CmpOpEq
		}
		c.emit(&expr.Cmp{Op: op, Register: reg1, Data: zero})
		return nil
	case (f.typ == typeIPv4 || f.typ == typeIPv6) && strings.Contains(value, "/"):
		return c.comparePrefix(f, value, op)
	}
	b, err := f.typ.parse(value)
	if err != nil {
		return c.errorf("%s: %v", f.name, err)
	}
	c.emit(&expr.Cmp{Op: op, Register: reg1, Data: b})
	return nil
}

func (c *ruleCompiler) comparePrefix(f *field, value string, op expr.CmpOp) error {
	p, err := netip.ParsePrefix(value)
	if err != nil || p.Addr().BitLen() != f.typ.len*8 || p.Addr().Zone() != "" || p.Bits() == 0 {
		return c.errorf("%s: bad prefix", f.name)
	}
	addr := p.Masked().Addr().AsSlice()
	load := c.out.exprs[len(c.out.exprs)-1].(*expr.Payload) // the field's, just emitted
	if p.Bits()%8 == 0 {
		load.Len = uint32(p.Bits() / 8)
		c.emit(&expr.Cmp{Op: op, Register: reg1, Data: addr[:p.Bits()/8]})
		return nil
	}
	c.emit(&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: uint32(len(addr)),
		Mask: prefixMask(p.Bits(), len(addr)), Xor: make([]byte, len(addr))},
		&expr.Cmp{Op: op, Register: reg1, Data: addr})
	return nil
}

// prefixMask is the network mask of a prefix length, size bytes long.
func prefixMask(bits, size int) []byte {
	m := make([]byte, size)
	for i := 0; i < bits; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return m
}

// nftElement builds an element from a key and value as a map prints them.
func nftElement(key, value string) nft.Element { return nft.Element{Key: key, Value: value} }

// maskedCompare compiles "meta mark & MASK != VALUE" (or "==").
func (c *ruleCompiler) maskedCompare(f *field) error {
	mask, err := f.typ.parse(c.ts.next().text)
	if err != nil {
		return c.errorf("bad mask: %v", err)
	}
	op := expr.CmpOpEq
	switch c.ts.next().text {
	case "!=":
		op = expr.CmpOpNeq
	case "==":
	default:
		return c.errorf("want != or == after the mask")
	}
	v, err := f.typ.parse(c.ts.next().text)
	if err != nil {
		return c.errorf("bad value: %v", err)
	}
	c.emit(&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
		&expr.Cmp{Op: op, Register: reg1, Data: v})
	return nil
}
