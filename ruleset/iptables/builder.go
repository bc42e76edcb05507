package iptables

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// Builder composes one Rule in iptables-save's canonical order, whatever the
// order of the calls: source, destination, protocol, then the matches in the
// order they were added, then the target. Each method spells its option the
// way iptables-save prints it back (for example "/32" on host addresses and
// "--set-xmark" for MARK), so a rendered rule equals the rule read back from
// the kernel.
type Builder struct {
	src, dst, proto string
	matches         strings.Builder
	target          string
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

func negate(not bool, opt string) string {
	if not {
		return "! " + opt
	}
	return opt
}

// Source matches the source address or prefix ("-s").
func (b *Builder) Source(p netip.Prefix, not bool) *Builder {
	b.src = negate(not, "-s ") + p.Masked().String()
	return b
}

// SourceAddr matches one source address ("-s a.b.c.d/32").
func (b *Builder) SourceAddr(a netip.Addr) *Builder {
	return b.Source(netip.PrefixFrom(a, a.BitLen()), false)
}

// Dest matches the destination address or prefix ("-d").
func (b *Builder) Dest(p netip.Prefix, not bool) *Builder {
	b.dst = negate(not, "-d ") + p.Masked().String()
	return b
}

// DestAddr matches one destination address ("-d a.b.c.d/32").
func (b *Builder) DestAddr(a netip.Addr) *Builder {
	return b.Dest(netip.PrefixFrom(a, a.BitLen()), false)
}

// InInterface matches the input interface ("-i"); a trailing "+" is a prefix match.
func (b *Builder) InInterface(name string, not bool) *Builder {
	// iptables-save prints -i after -s/-d and before -p; keep it with dst.
	if b.dst != "" {
		b.dst += " " + negate(not, "-i ") + name
	} else {
		b.dst = negate(not, "-i ") + name
	}
	return b
}

// Protocol matches the layer-4 protocol ("-p tcp").
func (b *Builder) Protocol(proto string) *Builder {
	b.proto = "-p " + proto
	return b
}

// Comment adds "-m comment --comment TEXT", quoted as iptables-save quotes it.
func (b *Builder) Comment(text string) *Builder {
	b.matches.WriteString(" -m comment --comment ")
	b.matches.WriteString(QuoteString(text))
	return b
}

// DPort adds the protocol's match module with a destination port
// ("-m tcp --dport 80"). Call Protocol too.
func (b *Builder) DPort(proto string, port int32) *Builder {
	b.matches.WriteString(" -m " + proto + " --dport " + strconv.Itoa(int(port)))
	return b
}

// ProtoMatch adds the protocol's match module without options ("-m tcp").
func (b *Builder) ProtoMatch(proto string) *Builder {
	b.matches.WriteString(" -m " + proto)
	return b
}

// Match adds a match module with its options, already in canonical spelling
// (for example Match("addrtype", "--dst-type LOCAL")).
func (b *Builder) Match(module, options string) *Builder {
	b.matches.WriteString(" -m " + module)
	if options != "" {
		b.matches.WriteString(" " + options)
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
	b.target = "-j " + target
	for _, o := range options {
		b.target += " " + o
	}
	return b
}

// Rule returns the composed rule.
func (b *Builder) Rule() Rule {
	var s strings.Builder
	s.Grow(len(b.src) + len(b.dst) + len(b.proto) + b.matches.Len() + len(b.target) + 4)
	for _, part := range []string{b.src, b.dst, b.proto} {
		if part != "" {
			if s.Len() > 0 {
				s.WriteByte(' ')
			}
			s.WriteString(part)
		}
	}
	m := b.matches.String()
	if s.Len() == 0 {
		m = strings.TrimPrefix(m, " ")
	}
	s.WriteString(m)
	if b.target != "" {
		if s.Len() > 0 {
			s.WriteByte(' ')
		}
		s.WriteString(b.target)
	}
	return Rule(s.String())
}

// QuoteString spells a string option the way iptables-save does
// (xtables_save_string): bare when it is only letters, digits, "_" and "-",
// otherwise in double quotes with `"`, `\` and `'` escaped.
func QuoteString(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	if plain {
		return s
	}
	var q strings.Builder
	q.Grow(len(s) + 2)
	q.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c == '\'' {
			q.WriteByte('\\')
		}
		q.WriteByte(s[i])
	}
	q.WriteByte('"')
	return q.String()
}
