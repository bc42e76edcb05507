package iptables

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// target parses "-j TARGET [options]" or "-g CHAIN".
func (p *parser) target(isGoto bool) error {
	name, err := p.next()
	if err != nil {
		return err
	}
	r := p.r
	if isGoto {
		r.kind, r.chain = tGoto, name
		return nil
	}
	switch name {
	case "ACCEPT":
		r.kind = tAccept
	case "DROP":
		r.kind = tDrop
	case "RETURN":
		r.kind = tReturn
	case "REJECT":
		r.kind = tReject
		return p.targetOptions(name, "--reject-with")
	case "MASQUERADE":
		r.kind = tMasquerade
		return p.targetFlags(name, "--random-fully", "--random")
	case "DNAT":
		r.kind = tDNAT
		return p.dnat()
	case "REDIRECT":
		r.kind = tRedirect
		return p.redirect()
	case "MARK":
		r.kind = tMark
		return p.mark()
	default:
		// A chain of the same table: checked once every chain is loaded.
		if p.more() {
			return fmt.Errorf("unknown target %q", name)
		}
		r.kind, r.chain = tJump, name
	}
	return nil
}

// targetOptions accepts the listed options with one value each.
func (p *parser) targetOptions(target string, opts ...string) error {
	for p.more() {
		o, _ := p.next()
		if !contains(opts, o) {
			return fmt.Errorf("unknown option %q of target %s", o, target)
		}
		if _, err := p.next(); err != nil {
			return err
		}
	}
	return nil
}

// targetFlags accepts the listed options without values.
func (p *parser) targetFlags(target string, flags ...string) error {
	for p.more() {
		if o, _ := p.next(); !contains(flags, o) {
			return fmt.Errorf("unknown option %q of target %s", o, target)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) dnat() error {
	if o, _ := p.next(); o != "--to-destination" {
		return fmt.Errorf("DNAT without --to-destination")
	}
	v, err := p.next()
	if err != nil {
		return err
	}
	if ap, err := netip.ParseAddrPort(v); err == nil {
		p.r.to = ap
	} else if a, err := netip.ParseAddr(strings.Trim(v, "[]")); err == nil {
		p.r.to = netip.AddrPortFrom(a, 0)
	} else {
		return fmt.Errorf("DNAT to %q: not ADDRESS[:PORT]", v)
	}
	return p.targetFlags("DNAT")
}

func (p *parser) redirect() error {
	if o, _ := p.next(); o != "--to-ports" {
		return fmt.Errorf("REDIRECT without --to-ports")
	}
	v, err := p.next()
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return fmt.Errorf("REDIRECT to ports %q: not one port", v)
	}
	p.r.port = uint16(n)
	return p.targetFlags("REDIRECT")
}

// mark parses MARK --set-xmark VALUE/MASK as iptables-save prints every
// MARK: the new mark is (mark AND NOT MASK) XOR VALUE.
func (p *parser) mark() error {
	o, err := p.next()
	if err != nil {
		return err
	}
	v, err := p.next()
	if err != nil {
		return err
	}
	if o != "--set-xmark" {
		return fmt.Errorf("unknown option %q of target MARK", o)
	}
	p.r.mark, p.r.mask, err = parseMark(v, 0xffffffff)
	if err != nil {
		return err
	}
	return p.targetFlags("MARK")
}
