package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// matcher tests one match of a rule against a branch.
type matcher func(st *trace.State) bool

// targetKind is what a rule does when it matches.
type targetKind int

const (
	tNone targetKind = iota
	tJump
	tGoto
	tReturn
	tAccept
	tDrop
	tReject
	tDNAT
	tRedirect
	tMark
	tMasquerade
)

// rule is one rule turned into matchers and a target, once, at load.
type rule struct {
	text     string
	matches  []matcher
	prob     float64 // statistic --probability; 1 without
	affinity int     // recent --seconds: the affinity timeout
	rcheck   bool    // recent --rcheck/--update: never matches a new client
	kind     targetKind
	chain    string         // tJump, tGoto
	to       netip.AddrPort // tDNAT (port 0: keep)
	port     uint16         // tRedirect
	mark     uint32         // tMark: value
	mask     uint32         // tMark: mask
}

// UnknownError is a rule the evaluator cannot follow; the trace fails
// rather than skip it.
type UnknownError struct {
	Table, Chain, Rule, What string
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("cannot trace %s %s rule %q: %s", e.Table, e.Chain, e.Rule, e.What)
}

// parser reads a rule's words.
type parser struct {
	ev    *Evaluator
	words []string
	i     int
	r     *rule
}

func (p *parser) more() bool { return p.i < len(p.words) }
func (p *parser) peek() string {
	if p.more() {
		return p.words[p.i]
	}
	return ""
}
func (p *parser) next() (string, error) {
	if !p.more() {
		return "", fmt.Errorf("option %q lacks its value", p.words[p.i-1])
	}
	p.i++
	return p.words[p.i-1], nil
}

// negated consumes a "!" and reports whether there was one.
func (p *parser) negated() bool {
	if p.peek() == "!" {
		p.i++
		return true
	}
	return false
}

func (ev *Evaluator) parseRule(text string, words []string) (*rule, error) {
	p := &parser{ev: ev, words: words, r: &rule{text: text, prob: 1}}
	for p.more() {
		not := p.negated()
		opt, _ := p.next()
		var err error
		switch opt {
		case "-s", "-d":
			err = p.address(opt == "-s", not)
		case "-i":
			err = p.inInterface(not)
		case "-p":
			err = p.protocol(not)
		case "-m":
			if not {
				return nil, fmt.Errorf("\"! -m\" is not a match")
			}
			err = p.module()
		case "-j", "-g":
			err = p.target(opt == "-g")
		default:
			return nil, fmt.Errorf("unknown option %q", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	return p.r, nil
}

func (p *parser) add(not bool, m matcher) {
	if not {
		p.r.matches = append(p.r.matches, func(st *trace.State) bool { return !m(st) })
		return
	}
	p.r.matches = append(p.r.matches, m)
}

func (p *parser) address(src, not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	pfx, err := parsePrefix(v)
	if err != nil {
		return err
	}
	if src {
		p.add(not, func(st *trace.State) bool { return pfx.Contains(st.Packet.Src) })
	} else {
		p.add(not, func(st *trace.State) bool { return pfx.Contains(st.Packet.Dst) })
	}
	return nil
}

func parsePrefix(v string) (netip.Prefix, error) {
	if !strings.Contains(v, "/") {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad address %q", v)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	pfx, err := netip.ParsePrefix(v)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad prefix %q", v)
	}
	return pfx.Masked(), nil
}

func (p *parser) inInterface(not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	p.add(not, func(st *trace.State) bool { return ifaceMatches(v, st.InInterface) })
	return nil
}

// ifaceMatches is iptables' -i: a trailing "+" matches a prefix; no input
// interface (locally generated packets) matches nothing.
func ifaceMatches(pattern, iface string) bool {
	if iface == "" {
		return false
	}
	if prefix, ok := strings.CutSuffix(pattern, "+"); ok {
		return strings.HasPrefix(iface, prefix)
	}
	return pattern == iface
}

func (p *parser) protocol(not bool) error {
	v, err := p.next()
	if err != nil {
		return err
	}
	switch v {
	case "tcp", "udp", "sctp":
	default:
		return fmt.Errorf("unknown protocol %q", v)
	}
	p.add(not, func(st *trace.State) bool { return st.Packet.Protocol == v })
	return nil
}

func parseUint32(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	return uint32(n), err
}
