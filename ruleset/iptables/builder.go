package iptables

import (
	"math"
	"net/netip"
	"strconv"
)

// Builder composes one Rule in iptables-save's canonical order, whatever the
// order of the calls: source, destination, interfaces, protocol, then the
// matches in the order they were added, then the target. Each method spells
// its option the way iptables-save prints it back (for example "/32" on host
// addresses and "--set-xmark" for MARK), so a rendered rule equals the rule
// read back from the kernel. A Builder can be Reset and reused; Rule makes
// the only allocation.
type Builder struct {
	head    []byte // -s, -d
	iface   []byte // -i
	proto   []byte // -p
	matches []byte // -m ...
	target  []byte // -j ...
	scratch []byte
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

// Reset empties the builder, keeping its buffers.
func (b *Builder) Reset() *Builder {
	b.head, b.iface, b.proto, b.matches, b.target = b.head[:0], b.iface[:0], b.proto[:0], b.matches[:0], b.target[:0]
	return b
}

func appendOpt(buf []byte, not bool, opt string) []byte {
	if len(buf) > 0 {
		buf = append(buf, ' ')
	}
	if not {
		buf = append(buf, "! "...)
	}
	return append(buf, opt...)
}

// Source matches the source address or prefix ("-s"); it always comes
// first in the rule, even when added after other matches.
func (b *Builder) Source(p netip.Prefix, not bool) *Builder {
	if len(b.head) == 0 {
		b.head = appendOpt(b.head, not, "-s ")
		b.head, _ = p.Masked().AppendText(b.head)
		return b
	}
	src := appendOpt(nil, not, "-s ")
	src, _ = p.Masked().AppendText(src)
	b.head = append(append(src, ' '), b.head...)
	return b
}

// SourceAddr matches one source address ("-s a.b.c.d/32").
func (b *Builder) SourceAddr(a netip.Addr) *Builder {
	return b.Source(netip.PrefixFrom(a, a.BitLen()), false)
}

// Dest matches the destination address or prefix ("-d").
func (b *Builder) Dest(p netip.Prefix, not bool) *Builder {
	b.head = appendOpt(b.head, not, "-d ")
	b.head, _ = p.Masked().AppendText(b.head)
	return b
}

// DestAddr matches one destination address ("-d a.b.c.d/32").
func (b *Builder) DestAddr(a netip.Addr) *Builder {
	return b.Dest(netip.PrefixFrom(a, a.BitLen()), false)
}

// InInterface matches the input interface ("-i"); a trailing "+" is a
// prefix match. The name is one argument whatever it holds (AppendArg):
// a name with a space once gave the rule more matches of its own.
func (b *Builder) InInterface(name string, not bool) *Builder {
	b.iface = appendOpt(b.iface[:0], not, "-i ")
	b.iface = AppendArg(b.iface, name)
	return b
}

// Protocol matches the layer-4 protocol ("-p tcp").
func (b *Builder) Protocol(proto string) *Builder {
	b.proto = append(append(b.proto[:0], "-p "...), proto...)
	return b
}

// Comment adds "-m comment --comment TEXT", quoted as iptables-save quotes it.
func (b *Builder) Comment(text string) *Builder {
	if len(text) > CommentMaxLen {
		text = text[:CommentMaxLen] // what the kernel keeps: see CommentMaxLen
	}
	b.matches = append(b.matches, " -m comment --comment "...)
	b.matches = AppendQuoted(b.matches, text)
	return b
}

// DPort adds the protocol's match module with a destination port
// ("-m tcp --dport 80"). Call Protocol too.
func (b *Builder) DPort(proto string, port int32) *Builder {
	b.matches = append(b.matches, " -m "...)
	b.matches = append(b.matches, proto...)
	b.matches = append(b.matches, " --dport "...)
	b.matches = strconv.AppendInt(b.matches, int64(port), 10)
	return b
}

// ProtoMatch adds the protocol's match module without options ("-m tcp").
func (b *Builder) ProtoMatch(proto string) *Builder {
	b.matches = append(b.matches, " -m "...)
	b.matches = append(b.matches, proto...)
	return b
}

// Match adds a match module with its options, already in canonical spelling
// (for example Match("addrtype", "--dst-type LOCAL")).
func (b *Builder) Match(module, options string) *Builder {
	b.matches = append(b.matches, " -m "...)
	b.matches = append(b.matches, module...)
	if options != "" {
		b.matches = append(b.matches, ' ')
		b.matches = append(b.matches, options...)
	}
	return b
}

// Probability adds "-m statistic --mode random --probability P" with P as
// iptables-save prints it: the kernel keeps lround(p * 2^31), shown with 11
// decimals.
func (b *Builder) Probability(p float64) *Builder {
	return b.Match("statistic", "--mode random --probability "+FormatProbability(p))
}

// FormatProbability returns p as iptables-save shows it after the kernel
// has stored it as a 31-bit fraction.
func FormatProbability(p float64) string {
	stored := math.Round(p * 0x80000000)
	return strconv.FormatFloat(stored/0x80000000, 'f', 11, 64)
}

// Jump sets "-j TARGET" with optional target options.
func (b *Builder) Jump(target string, options ...string) *Builder {
	b.target = append(b.target[:0], "-j "...)
	b.target = append(b.target, target...)
	for _, o := range options {
		b.target = append(b.target, ' ')
		b.target = append(b.target, o...)
	}
	return b
}

// Rule returns the composed rule.
func (b *Builder) Rule() Rule {
	out := append(b.scratch[:0], b.head...)
	for _, part := range [][]byte{b.iface, b.proto} {
		if len(part) > 0 {
			if len(out) > 0 {
				out = append(out, ' ')
			}
			out = append(out, part...)
		}
	}
	m := b.matches
	if len(out) == 0 && len(m) > 0 {
		m = m[1:]
	}
	out = append(out, m...)
	if len(b.target) > 0 {
		if len(out) > 0 {
			out = append(out, ' ')
		}
		out = append(out, b.target...)
	}
	b.scratch = out
	return Rule(out)
}

// AppendArg appends s as one argument of an iptables-restore line: bare,
// as iptables-save prints an interface name, when iptables-restore reads
// it back as it stands, else quoted as AppendQuoted quotes. So no value
// can become more than one argument, or none. A control character still
// ends the line; ValidateRule refuses it before anything is written.
func AppendArg(buf []byte, s string) []byte {
	bare := s != ""
	for i := 0; i < len(s) && bare; i++ {
		c := s[i]
		bare = c > ' ' && c != 0x7f && c != '"' && c != '\'' && c != '\\'
	}
	if bare {
		return append(buf, s...)
	}
	return AppendQuoted(buf, s)
}

// AppendQuoted appends s as iptables-save prints a string option: bare
// when it is only letters, digits, "_" and "-", otherwise in double quotes
// with '"', '\\' and "'" escaped by a backslash.
func AppendQuoted(buf []byte, s string) []byte {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if plain {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c == '\'' {
			buf = append(buf, '\\')
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}
