package iptablesnft

import (
	"encoding/binary"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// targets are the xtables targets this package prints, by name and
// revision, as their libxt_*.c save functions print them (iptables v1.8.9).
var targets = map[xtKey]xtFormat{
	{"MARK", 2}:       markTarget,
	{"MASQUERADE", 0}: masqueradeTarget,
	{"REDIRECT", 0}:   redirectTarget,
	{"DNAT", 2}:       dnatTarget,
	{"REJECT", 0}:     rejectTarget,
}

// markTarget: struct xt_mark_tginfo2 { u32 mark, mask; }.
func markTarget(info []byte, _ family) (string, error) {
	b := newBlob(info, 8)
	text := " --set-xmark 0x" + strconv.FormatUint(uint64(b.u32(0)), 16) + "/0x" + strconv.FormatUint(uint64(b.u32(4)), 16)
	return text, b.err("MARK")
}

// natRange is a NAT target's range: IPv4's rev-0 targets carry struct
// nf_nat_ipv4_multi_range_compat { u32 rangesize; { u32 flags; be32
// min_ip, max_ip; be16 min, max; } range[1]; }, IPv6's struct
// nf_nat_range { u32 flags; nf_inet_addr min_addr, max_addr; be16
// min_proto, max_proto; }, and DNAT rev 2 struct nf_nat_range2, which adds
// be16 base_proto.
type natRange struct {
	flags            uint32
	minAddr, maxAddr netip.Addr
	minPort, maxPort uint16
	basePort         uint16
	hasBase          bool
}

func compatRange(info []byte, fam family) (natRange, error) {
	if fam.v6 {
		return fullRange(info, fam, false)
	}
	b := newBlob(info, 20)
	if err := b.err("NAT range"); err != nil {
		return natRange{}, err
	}
	if b.u32(0) != 1 {
		return natRange{}, unknown("a NAT target with %d ranges", b.u32(0))
	}
	lo, _ := netip.AddrFromSlice(info[8:12])
	hi, _ := netip.AddrFromSlice(info[12:16])
	return natRange{flags: b.u32(4), minAddr: lo, maxAddr: hi,
		minPort: binary.BigEndian.Uint16(info[16:]), maxPort: binary.BigEndian.Uint16(info[18:])}, nil
}

func fullRange(info []byte, fam family, withBase bool) (natRange, error) {
	size := 40
	if withBase {
		size = 42
	}
	b := newBlob(info, size)
	if err := b.err("NAT range"); err != nil {
		return natRange{}, err
	}
	lo, _ := netip.AddrFromSlice(info[4 : 4+fam.addrSize])
	hi, _ := netip.AddrFromSlice(info[20 : 20+fam.addrSize])
	r := natRange{flags: b.u32(0), minAddr: lo, maxAddr: hi,
		minPort: binary.BigEndian.Uint16(info[36:]), maxPort: binary.BigEndian.Uint16(info[38:])}
	if withBase {
		r.basePort = binary.BigEndian.Uint16(info[40:])
	}
	return r, nil
}

// portsText is "--to-ports N[-M]" of MASQUERADE and REDIRECT, then their
// flags.
func (r natRange) portsText() (string, error) {
	if r.flags&^(unix.NF_NAT_RANGE_PROTO_SPECIFIED|unix.NF_NAT_RANGE_PROTO_RANDOM|unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY) != 0 {
		return "", unknown("NAT flags 0x%x", r.flags)
	}
	var s string
	if r.flags&unix.NF_NAT_RANGE_PROTO_SPECIFIED != 0 {
		s = " --to-ports " + strconv.Itoa(int(r.minPort))
		if r.maxPort != r.minPort {
			s += "-" + strconv.Itoa(int(r.maxPort))
		}
	}
	return s + r.flagsText(), nil
}

func (r natRange) flagsText() string {
	var s string
	if r.flags&unix.NF_NAT_RANGE_PROTO_RANDOM != 0 {
		s += " --random"
	}
	if r.flags&unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY != 0 {
		s += " --random-fully"
	}
	return s
}

func masqueradeTarget(info []byte, fam family) (string, error) {
	r, err := compatRange(info, fam)
	if err != nil {
		return "", err
	}
	return r.portsText()
}

func redirectTarget(info []byte, fam family) (string, error) {
	r, err := compatRange(info, fam)
	if err != nil {
		return "", err
	}
	return r.portsText()
}

// dnatTarget prints "--to-destination ADDR[:PORT]" for one address and
// at most one port, the only DNAT kube-proxy writes; a range, a base port
// or another flag is left to iptables-nft-save.
func dnatTarget(info []byte, fam family) (string, error) {
	r, err := fullRange(info, fam, true)
	if err != nil {
		return "", err
	}
	if r.flags&^(unix.NF_NAT_RANGE_MAP_IPS|unix.NF_NAT_RANGE_PROTO_SPECIFIED) != 0 || r.flags&unix.NF_NAT_RANGE_MAP_IPS == 0 || r.minAddr != r.maxAddr {
		return "", unknown("a DNAT of an address range or with flags 0x%x", r.flags)
	}
	if fam.v6 && !ipv6PrintsAsGo(r.minAddr) {
		return "", unknown("an IPv6 address inet_ntop prints with an IPv4 tail")
	}
	s := " --to-destination " + r.minAddr.String()
	if r.flags&unix.NF_NAT_RANGE_PROTO_SPECIFIED != 0 {
		if r.maxPort != r.minPort || (r.basePort != 0 && r.basePort != r.minPort) {
			return "", unknown("a DNAT to a port range")
		}
		if fam.v6 {
			s = " --to-destination [" + r.minAddr.String() + "]"
		}
		s += ":" + strconv.Itoa(int(r.minPort))
	}
	return s, nil
}

// rejectTarget: struct ipt_reject_info / ip6t_reject_info { u32 with; }.
// Only the ICMP port-unreachable answer, kube-proxy's, is printed.
func rejectTarget(info []byte, fam family) (string, error) {
	b := newBlob(info, 4)
	with := b.u32(0)
	if err := b.err("REJECT"); err != nil {
		return "", err
	}
	switch {
	case !fam.v6 && with == 3:
		return " --reject-with icmp-port-unreachable", nil
	case fam.v6 && with == 4:
		return " --reject-with icmp6-port-unreachable", nil
	}
	return "", unknown("REJECT with answer %d", with)
}
