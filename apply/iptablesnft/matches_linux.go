package iptablesnft

import (
	"bytes"
	"encoding/binary"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// matches are the xtables matches this package prints, by name and
// revision, each as its libxt_*.c save function prints it (iptables
// v1.8.9). The structures are the kernel's (linux/netfilter/xt_*.h), in
// host byte order unless said.
var matches = map[xtKey]xtFormat{
	{"comment", 0}:   commentMatch,
	{"conntrack", 3}: conntrackMatch,
	{"addrtype", 1}:  addrtypeMatch,
	{"statistic", 0}: statisticMatch,
	{"recent", 1}:    recentMatch,
	{"nfacct", 1}:    nfacctMatch,
	{"mark", 1}:      markMatch,
	{"tcp", 0}:       tcpMatch,
	{"udp", 0}:       udpMatch,
	{"sctp", 0}:      sctpMatch,
	{"physdev", 0}:   physdevMatch,
}

// blob reads fixed fields of an xtables structure, remembering whether
// the structure was long enough.
type blob struct {
	b  []byte
	ok bool
}

func newBlob(info []byte, size int) *blob { return &blob{b: info, ok: len(info) >= size} }

func (b *blob) u8(off int) uint8 {
	if !b.ok {
		return 0
	}
	return b.b[off]
}

func (b *blob) u16(off int) uint16 {
	if !b.ok {
		return 0
	}
	return binary.NativeEndian.Uint16(b.b[off:])
}

func (b *blob) u32(off int) uint32 {
	if !b.ok {
		return 0
	}
	return binary.NativeEndian.Uint32(b.b[off:])
}

// str reads a NUL-terminated char array of n bytes; one without its NUL
// is refused.
func (b *blob) str(off, n int) string {
	if !b.ok {
		return ""
	}
	s := b.b[off : off+n]
	i := bytes.IndexByte(s, 0)
	if i < 0 {
		b.ok = false
		return ""
	}
	return string(s[:i])
}

func (b *blob) err(what string) error {
	if !b.ok {
		return unknown("a %s structure too short or unterminated", what)
	}
	return nil
}

// commentMatch: struct xt_comment_info { char comment[256]; }.
func commentMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 256)
	s := b.str(0, 256)
	return " --comment" + quoted(s), b.err("comment")
}

// nfacctMatch: struct xt_nfacct_match_info_v1 { char name[32]; ... }.
// libxt_nfacct prints "--nfacct-name " and then the quoted name with its
// own leading space: two spaces, as kube-proxy's rules are spelt.
func nfacctMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 32)
	s := b.str(0, 32)
	return " --nfacct-name " + quoted(s), b.err("nfacct")
}

// markMatch: struct xt_mark_mtinfo1 { u32 mark, mask; u8 invert; }.
func markMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 9)
	text := " " + markText(b.u8(8) != 0, b.u32(0), b.u32(4))
	return text, b.err("mark")
}

// Connection states as xt_conntrack.h numbers them, in the order
// libxt_conntrack prints them.
var ctStates = []struct {
	bit  uint16
	name string
}{
	{1 << 0, "INVALID"}, {1 << 3, "NEW"}, {1 << 2, "RELATED"}, {1 << 1, "ESTABLISHED"},
	{1 << 8, "UNTRACKED"}, {1 << 6, "SNAT"}, {1 << 7, "DNAT"},
}

// Fields and flags of struct xt_conntrack_mtinfo3, whose match_flags,
// invert_flags and state_mask sit after eight addresses, two u32 and five
// u16.
const (
	ctMatchFlags, ctInvertFlags, ctStateMask, ctSize = 146, 148, 150, 162

	ctFlagState      = 1 << 0
	ctFlagStateAlias = 1 << 13 // written for "-m state", which is conntrack's alias
)

// stateAlias reports whether a conntrack match was written as "-m state
// --state", which iptables-nft-save prints under that name.
func stateAlias(info []byte) bool {
	b := newBlob(info, ctSize)
	return b.u16(ctMatchFlags) == ctFlagState|ctFlagStateAlias
}

// conntrackMatch prints "--ctstate" (or "--state" for the alias); any
// other conntrack test is left to iptables-nft-save.
func conntrackMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, ctSize)
	flags, inv, states := b.u16(ctMatchFlags), b.u16(ctInvertFlags), b.u16(ctStateMask)
	if err := b.err("conntrack"); err != nil {
		return "", err
	}
	opt := " --ctstate "
	if flags == ctFlagState|ctFlagStateAlias {
		flags, opt = ctFlagState, " --state "
	}
	if flags != ctFlagState || inv&^ctFlagState != 0 {
		return "", unknown("a conntrack test other than --ctstate")
	}
	var names []string
	for _, s := range ctStates {
		if states&s.bit != 0 {
			names = append(names, s.name)
			states &^= s.bit
		}
	}
	if states != 0 || len(names) == 0 {
		return "", unknown("conntrack states 0x%x", states)
	}
	text := opt + strings.Join(names, ",")
	if inv != 0 {
		text = " !" + text
	}
	return text, nil
}

// Route types as addrtype prints them, bit i for RTN_* number i.
var addrTypes = []string{"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"}

// addrtypeMatch: struct xt_addrtype_info_v1 { u16 source, dest; u32 flags; }.
func addrtypeMatch(info []byte, _ family) (string, error) {
	const invSrc, invDst, limitIn, limitOut = 1, 2, 4, 8
	b := newBlob(info, 8)
	src, dst, flags := b.u16(0), b.u16(2), b.u32(4)
	if err := b.err("addrtype"); err != nil {
		return "", err
	}
	if flags&^(invSrc|invDst|limitIn|limitOut) != 0 || (src|dst)>>len(addrTypes) != 0 {
		return "", unknown("addrtype flags 0x%x", flags)
	}
	var s string
	for _, side := range []struct {
		types  uint16
		invert uint32
		opt    string
	}{{src, invSrc, " --src-type "}, {dst, invDst, " --dst-type "}} {
		if side.types == 0 {
			continue
		}
		if flags&side.invert != 0 {
			s += " !"
		}
		var names []string
		for i, n := range addrTypes {
			if side.types&(1<<i) != 0 {
				names = append(names, n)
			}
		}
		s += side.opt + strings.Join(names, ",")
	}
	if flags&limitIn != 0 {
		s += " --limit-iface-in"
	}
	if flags&limitOut != 0 {
		s += " --limit-iface-out"
	}
	return s, nil
}

// statisticMatch: struct xt_statistic_info { u16 mode, flags; u32
// probability (random mode); ... }. Only the random mode is printed.
func statisticMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 8)
	mode, flags, p := b.u16(0), b.u16(2), b.u32(4)
	if err := b.err("statistic"); err != nil {
		return "", err
	}
	if mode != 0 || flags&^1 != 0 {
		return "", unknown("statistic mode %d", mode)
	}
	not := ""
	if flags&1 != 0 {
		not = " !"
	}
	return " --mode random" + not + " --probability " + strconv.FormatFloat(float64(p)/0x80000000, 'f', 11, 64), nil
}

// recentMatch: struct xt_recent_mtinfo_v1 { u32 seconds, hit_count; u8
// check_set, invert; char name[200]; u8 side; union nf_inet_addr mask; }.
func recentMatch(info []byte, fam family) (string, error) {
	const checkSet, invert, name, side, mask, size = 8, 9, 10, 210, 212, 228
	const rcheck, set, update, remove, ttl, reap = 1, 2, 4, 8, 16, 32
	b := newBlob(info, size)
	seconds, hits, flags := b.u32(0), b.u32(4), b.u8(checkSet)
	n, sideV := b.str(name, 200), b.u8(side)
	if err := b.err("recent"); err != nil {
		return "", err
	}
	maskText, maskOK := maskAddr(info[mask:mask+16], fam)
	// libxt_recent prints --seconds and --hitcount as signed ints.
	if sideV > 1 || flags&^(rcheck|set|update|remove|ttl|reap) != 0 || !plainName(n) || !maskOK ||
		seconds > math.MaxInt32 || hits > math.MaxInt32 {
		return "", unknown("a recent match of an unknown form")
	}
	var s strings.Builder
	if b.u8(invert) != 0 {
		s.WriteString(" !")
	}
	for _, f := range []struct {
		bit  uint8
		text string
	}{{set, " --set"}, {rcheck, " --rcheck"}, {update, " --update"}, {remove, " --remove"}} {
		if flags&f.bit != 0 {
			s.WriteString(f.text)
		}
	}
	if seconds != 0 {
		s.WriteString(" --seconds " + itoa(seconds))
	}
	if flags&reap != 0 {
		s.WriteString(" --reap")
	}
	if hits != 0 {
		s.WriteString(" --hitcount " + itoa(hits))
	}
	if flags&ttl != 0 {
		s.WriteString(" --rttl")
	}
	s.WriteString(" --name " + n + " --mask " + maskText)
	s.WriteString([]string{" --rsource", " --rdest"}[sideV])
	return s.String(), nil
}

// plainName reports whether a name prints the same quoted or not.
func plainName(s string) bool { return s != "" && quoted(s) == " "+s }

// maskAddr prints an address of the family from a union nf_inet_addr, if
// Go spells it as glibc's inet_ntop does.
func maskAddr(u []byte, fam family) (string, bool) {
	a, _ := netip.AddrFromSlice(u[:fam.addrSize])
	return a.String(), !a.Is6() || ipv6PrintsAsGo(a)
}

// portMatch prints the port ranges of struct xt_tcp and struct xt_udp,
// whose first fields are u16 spts[2], dpts[2]; the inversion bits are 1
// for the source port and 2 for the destination port in both.
func portMatch(b *blob, invflags uint8) string {
	return portText("--sport", invflags&1 != 0, b.u16(0), b.u16(2)) +
		portText("--dport", invflags&2 != 0, b.u16(4), b.u16(6))
}

// tcpMatch: struct xt_tcp { u16 spts[2], dpts[2]; u8 option, flg_mask,
// flg_cmp, invflags; }. Options and flags are left to iptables-nft-save.
func tcpMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 12)
	option, flgMask, flgCmp, inv := b.u8(8), b.u8(9), b.u8(10), b.u8(11)
	if err := b.err("tcp"); err != nil {
		return "", err
	}
	if option != 0 || flgMask != 0 || flgCmp != 0 || inv&^3 != 0 {
		return "", unknown("a tcp match with options or flags")
	}
	return portMatch(b, inv), nil
}

// udpMatch: struct xt_udp { u16 spts[2], dpts[2]; u8 invflags; }.
func udpMatch(info []byte, _ family) (string, error) {
	b := newBlob(info, 9)
	inv := b.u8(8)
	if err := b.err("udp"); err != nil {
		return "", err
	}
	if inv&^3 != 0 {
		return "", unknown("udp inversion flags 0x%x", inv)
	}
	return portMatch(b, inv), nil
}

// sctpMatch: struct xt_sctp_info { u16 dpts[2], spts[2]; u32
// chunkmap[64], chunk_match_type; struct flag_info[4] (3 bytes each); int
// flag_count; u32 flags, invflags; }. Chunk tests are left to
// iptables-nft-save.
func sctpMatch(info []byte, _ family) (string, error) {
	const flags, invflags, size = 284, 288, 292
	const srcPorts, dstPorts = 1, 2
	b := newBlob(info, size)
	f, inv := b.u32(flags), b.u32(invflags)
	if err := b.err("sctp"); err != nil {
		return "", err
	}
	if f&^(srcPorts|dstPorts) != 0 || inv&^f != 0 {
		return "", unknown("an sctp match with chunk tests")
	}
	var s string
	if f&srcPorts != 0 {
		s += sctpPorts("--sport", inv&srcPorts != 0, b.u16(4), b.u16(6))
	}
	if f&dstPorts != 0 {
		s += sctpPorts("--dport", inv&dstPorts != 0, b.u16(0), b.u16(2))
	}
	return s, nil
}

// sctpPorts is libxt_sctp's save of a port option: printed whenever its
// flag is set, even for the whole range.
func sctpPorts(opt string, not bool, lo, hi uint16) string {
	s := portText(opt, not, lo, hi)
	if s == "" {
		s = " " + opt + " 0:65535"
		if not {
			s = " !" + s
		}
	}
	return s
}

// physdevMatch: struct xt_physdev_info { char physindev[16], in_mask[16],
// physoutdev[16], out_mask[16]; u8 invert, bitmask; }. Only the tests of
// whether there is a bridge port are printed; port names are left to
// iptables-nft-save.
func physdevMatch(info []byte, _ family) (string, error) {
	const invert, bitmask, size = 64, 65, 66
	b := newBlob(info, size)
	inv, ops := b.u8(invert), b.u8(bitmask)
	if err := b.err("physdev"); err != nil {
		return "", err
	}
	const isIn, isOut, isBridged = 8, 16, 4
	if ops&^(isIn|isOut|isBridged) != 0 || inv&^ops != 0 {
		return "", unknown("a physdev test of a port name")
	}
	var s string
	for _, op := range []struct {
		bit  uint8
		text string
	}{{isIn, " --physdev-is-in"}, {isOut, " --physdev-is-out"}, {isBridged, " --physdev-is-bridged"}} {
		if ops&op.bit == 0 {
			continue
		}
		if inv&op.bit != 0 {
			s += " !"
		}
		s += op.text
	}
	return s, nil
}
