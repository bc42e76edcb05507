package iptablesnft

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// family holds where a family's addresses sit in the network header.
type family struct {
	v6       bool
	addrSize int
	src, dst uint32 // offsets of the source and destination addresses
}

var (
	ipv4 = family{addrSize: 4, src: 12, dst: 16}
	ipv6 = family{v6: true, addrSize: 16, src: 8, dst: 24}
)

// rule is one rule's parts in the order iptables-save prints them: the
// addresses, the interfaces, the protocol, the matches in their order in
// the rule, then the target. Each part starts with a space.
type rule struct {
	fam              family
	src, dst         string
	in, out, proto   string
	l4               byte // the protocol -p names, when not negated
	ports            bool // a native port test was read
	matches, target  []byte
	targetSet, final bool
}

// protocols are the -p names iptables-save prints for the protocols
// kube-proxy matches; any other number is left to iptables-nft-save.
var protocols = map[byte]string{unix.IPPROTO_TCP: "tcp", unix.IPPROTO_UDP: "udp", unix.IPPROTO_SCTP: "sctp"}

// appendRule appends "-A chain ..." and a newline for one rule.
func appendRule(buf []byte, fam family, chain string, exprs []nftables.RawExpr) ([]byte, error) {
	r := rule{fam: fam}
	for i := 0; i < len(exprs); {
		e := exprs[i]
		if r.final && e.Name != "counter" {
			return nil, unknown("an expression after the rule's verdict")
		}
		n := 1
		var err error
		switch e.Name {
		case "counter":
		case "payload", "meta":
			var t test
			if t, n, err = readTest(exprs[i:]); err == nil {
				err = r.addTest(t)
			}
		case "match":
			err = r.addMatch(e)
		case "target":
			err = r.setTarget(e)
		case "immediate":
			err = r.setVerdict(e)
		default:
			err = unknown("expression %q", e.Name)
		}
		if err != nil {
			return nil, err
		}
		i += n
	}
	return r.appendTo(append(append(buf, "-A "...), chain...)), nil
}

func (r *rule) appendTo(buf []byte) []byte {
	for _, part := range []string{r.src, r.dst, r.in, r.out, r.proto} {
		buf = append(buf, part...)
	}
	buf = append(buf, r.matches...)
	buf = append(buf, r.target...)
	return append(buf, '\n')
}

// addTest places one native test: an address, an interface, the
// protocol, a mark, or a port.
func (r *rule) addTest(t test) error {
	switch {
	case t.meta && t.key == unix.NFT_META_L4PROTO && t.mask == nil && len(t.data) == 1:
		return set(&r.proto, "-p", t.not, protocols[t.data[0]], func() {
			if !t.not {
				r.l4 = t.data[0]
			}
		})
	case t.meta && (t.key == unix.NFT_META_IIFNAME || t.key == unix.NFT_META_OIFNAME):
		name, err := t.ifaceName()
		if err != nil {
			return err
		}
		if t.key == unix.NFT_META_IIFNAME {
			return set(&r.in, "-i", t.not, name, nil)
		}
		return set(&r.out, "-o", t.not, name, nil)
	case t.meta && t.key == unix.NFT_META_MARK:
		text, err := t.markText()
		if err != nil {
			return err
		}
		r.addMatchText("mark", " "+text)
		return nil
	case !t.meta && t.base == unix.NFT_PAYLOAD_NETWORK_HEADER:
		return r.addAddress(t)
	case !t.meta && t.base == unix.NFT_PAYLOAD_TRANSPORT_HEADER:
		return r.addPort(t)
	}
	return unknown("a test of an unknown field")
}

// set fills a part of the rule's head once.
func set(part *string, opt string, not bool, value string, then func()) error {
	if *part != "" || value == "" {
		return unknown("%s twice, or of an unknown value", opt)
	}
	if not {
		*part = " !"
	}
	*part += " " + opt + " " + value
	if then != nil {
		then()
	}
	return nil
}

func (r *rule) addAddress(t test) error {
	opt, part := "", (*string)(nil)
	switch t.offset {
	case r.fam.src:
		opt, part = "-s", &r.src
	case r.fam.dst:
		opt, part = "-d", &r.dst
	default:
		return unknown("a network header field at offset %d", t.offset)
	}
	p, err := t.prefix(r.fam.addrSize)
	if err != nil {
		return err
	}
	return set(part, opt, t.not, p.String(), nil)
}

// addPort reads a native "--sport" or "--dport" of the tcp or udp match,
// which iptables-nft writes for "-p tcp -m tcp --dport N".
func (r *rule) addPort(t test) error {
	name := protocols[r.l4]
	if (name != "tcp" && name != "udp") || r.ports || t.mask != nil || t.length != 2 {
		return unknown("a transport header test of an unknown form")
	}
	opt := "--sport"
	switch t.offset {
	case 0:
	case 2:
		opt = "--dport"
	default:
		return unknown("a transport header field at offset %d", t.offset)
	}
	port := uint16(t.data[0])<<8 | uint16(t.data[1])
	r.ports = true
	r.addMatchText(name, portText(opt, t.not, port, port))
	return nil
}

// addMatchText appends " -m name" and the match's options, which start
// with a space when there are any.
func (r *rule) addMatchText(name, options string) {
	r.matches = append(append(r.matches, " -m "...), name...)
	r.matches = append(r.matches, options...)
}

// setVerdict reads an immediate verdict: a standard target or a jump.
func (r *rule) setVerdict(e nftables.RawExpr) error {
	a, err := nfnl.ParseAttrs(e.Data)
	if err != nil {
		return err
	}
	if reg, ok := a.U32(unix.NFTA_IMMEDIATE_DREG); !ok || reg != unix.NFT_REG_VERDICT {
		return unknown("an immediate other than a verdict")
	}
	data, err := nfnl.ParseAttrs(a[unix.NFTA_IMMEDIATE_DATA])
	if err != nil {
		return err
	}
	v, err := nfnl.ParseVerdict(data[unix.NFTA_DATA_VERDICT])
	if err != nil {
		return unknown("a verdict of an unknown form (%v)", err)
	}
	var text string
	switch v.Code {
	case nfnl.NF_ACCEPT:
		text = " -j ACCEPT"
	case nfnl.NF_DROP:
		text = " -j DROP"
	case unix.NFT_RETURN:
		text = " -j RETURN"
	case unix.NFT_JUMP:
		text = " -j " + v.Chain
	case unix.NFT_GOTO:
		text = " -g " + v.Chain
	default:
		return unknown("verdict %d", v.Code)
	}
	return r.finish([]byte(text))
}

func (r *rule) finish(target []byte) error {
	if r.targetSet {
		return unknown("two verdicts")
	}
	r.target, r.targetSet, r.final = target, true, true
	return nil
}

// xtBlob reads a match or target expression: its name, revision and info.
// A target's attributes are numbered as a match's (NFTA_TARGET_NAME is
// NFTA_MATCH_NAME, and so on).
func xtBlob(e nftables.RawExpr) (name string, rev uint32, info []byte, err error) {
	a, err := nfnl.ParseAttrs(e.Data)
	if err != nil {
		return "", 0, nil, err
	}
	rev, ok := a.U32(unix.NFTA_MATCH_REV)
	info, okInfo := a[unix.NFTA_MATCH_INFO]
	if !ok || !okInfo {
		return "", 0, nil, unknown("an xtables %s without revision or info", e.Name)
	}
	return a.String(unix.NFTA_MATCH_NAME), rev, info, nil
}

func (r *rule) addMatch(e nftables.RawExpr) error {
	name, rev, info, err := xtBlob(e)
	if err != nil {
		return err
	}
	f, ok := matches[xtKey{name, rev}]
	if !ok {
		return unknown("match %s revision %d", name, rev)
	}
	options, err := f(info, r.fam)
	if err != nil {
		return err
	}
	if name == "conntrack" && stateAlias(info) {
		name = "state"
	}
	r.addMatchText(name, options)
	return nil
}

func (r *rule) setTarget(e nftables.RawExpr) error {
	name, rev, info, err := xtBlob(e)
	if err != nil {
		return err
	}
	f, ok := targets[xtKey{name, rev}]
	if !ok {
		return unknown("target %s revision %d", name, rev)
	}
	options, err := f(info, r.fam)
	if err != nil {
		return err
	}
	return r.finish([]byte(" -j " + name + options))
}

// xtKey names an extension and its revision.
type xtKey struct {
	name string
	rev  uint32
}

// An xtFormat prints an extension's options as its save function does,
// each after a space, from the kernel structure it fills in.
type xtFormat func(info []byte, fam family) (string, error)

// quoted is a string option as iptables-save prints it, after a space.
func quoted(s string) string { return " " + string(ipt.AppendQuoted(nil, s)) }

// itoa is strconv.Itoa for the unsigned fields of xtables structures.
func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
