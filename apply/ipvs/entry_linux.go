package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// ipsetProtos are the protocol names `ipset save` prints in entries.
var ipsetProtos = map[uint8]string{1: "icmp", 6: "tcp", 17: "udp", 58: "icmpv6", 132: "sctp"}

// entryAttrs are the parts of one listed entry.
type entryAttrs struct {
	ip, ip2     netip.Addr
	cidr2       uint8
	port        uint16
	proto       uint8
	hasPort     bool
	hasProtocol bool
}

// formatEntry spells a listed entry as `ipset save` does: "10.96.0.1",
// "10.96.0.1,tcp:443", "...,10.244.0.5" (ip,port,ip), "...,10.0.0.0/8"
// (ip,port,net; a host prefix without its length), "30080" (bitmap:port).
func formatEntry(t ipvs.SetType, data []byte) (string, error) {
	var e entryAttrs
	for a := range nl.ParseAttributes(data) {
		switch a.Type & nl.NLA_TYPE_MASK {
		case nl.IPSET_ATTR_IP:
			e.ip = nestedAddr(a.Value)
		case nl.IPSET_ATTR_IP2:
			e.ip2 = nestedAddr(a.Value)
		case nl.IPSET_ATTR_CIDR2:
			e.cidr2 = a.Value[0]
		case nl.IPSET_ATTR_PORT:
			e.port, e.hasPort = binary.BigEndian.Uint16(a.Value), true
		case nl.IPSET_ATTR_PROTO:
			e.proto, e.hasProtocol = a.Value[0], true
		}
	}
	if t == ipvs.BitmapPort {
		return strconv.Itoa(int(e.port)), nil
	}
	if !e.ip.IsValid() {
		return "", fmt.Errorf("%s entry without an address", t)
	}
	out := e.ip.String()
	if t == ipvs.HashIP {
		return out, nil
	}
	proto, ok := ipsetProtos[e.proto]
	if !ok {
		proto = strconv.Itoa(int(e.proto))
	}
	out += "," + proto + ":" + strconv.Itoa(int(e.port))
	switch t {
	case ipvs.HashIPPortIP:
		out += "," + e.ip2.String()
	case ipvs.HashIPPortNet:
		out += "," + e.ip2.String()
		if int(e.cidr2) != e.ip2.BitLen() {
			out += "/" + strconv.Itoa(int(e.cidr2))
		}
	}
	return out, nil
}

func nestedAddr(data []byte) netip.Addr {
	for a := range nl.ParseAttributes(data) {
		if ip, ok := netip.AddrFromSlice(a.Value); ok {
			return ip
		}
	}
	return netip.Addr{}
}

// parseEntry reads an entry of a hash set in the spelling formatEntry writes.
func parseEntry(t ipvs.SetType, s string) (*netlink.IPSetEntry, error) {
	parts := strings.Split(s, ",")
	bad := fmt.Errorf("bad %s entry %q", t, s)
	ip, err := netip.ParseAddr(parts[0])
	if err != nil {
		return nil, bad
	}
	e := &netlink.IPSetEntry{IP: net.IP(ip.AsSlice())}
	if t == ipvs.HashIP {
		return e, nil
	}
	if len(parts) < 2 {
		return nil, bad
	}
	protoName, portText, ok := strings.Cut(parts[1], ":")
	port, err := strconv.ParseUint(portText, 10, 16)
	proto, known := protoNumber(protoName)
	if !ok || err != nil || !known {
		return nil, bad
	}
	p := uint16(port)
	e.Port, e.Protocol = &p, &proto
	switch {
	case t == ipvs.HashIPPort && len(parts) == 2:
		return e, nil
	case t == ipvs.HashIPPortIP && len(parts) == 3:
		ip2, err := netip.ParseAddr(parts[2])
		if err != nil {
			return nil, bad
		}
		e.IP2 = net.IP(ip2.AsSlice())
		return e, nil
	case t == ipvs.HashIPPortNet && len(parts) == 3:
		pfx, err := netip.ParsePrefix(parts[2])
		if err != nil {
			a, aerr := netip.ParseAddr(parts[2])
			if aerr != nil {
				return nil, bad
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		e.IP2, e.CIDR2 = net.IP(pfx.Addr().AsSlice()), uint8(pfx.Bits())
		return e, nil
	}
	return nil, bad
}

func protoNumber(name string) (uint8, bool) {
	for n, p := range ipsetProtos {
		if p == name {
			return n, true
		}
	}
	n, err := strconv.ParseUint(name, 10, 8)
	return uint8(n), err == nil
}

// parseRange reads a bitmap:port range ("0-65535").
func parseRange(r string) (from, to uint16, err error) {
	a, b, ok := strings.Cut(r, "-")
	x, err1 := strconv.ParseUint(a, 10, 16)
	y, err2 := strconv.ParseUint(b, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("bad port range %q", r)
	}
	return uint16(x), uint16(y), nil
}

// ipsetErr spells the kernel's ipset-specific error numbers.
func ipsetErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && errno >= nl.IPSET_ERR_PRIVATE {
		return nl.IPSetError(uintptr(errno))
	}
	return err
}
