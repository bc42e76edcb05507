package cluster

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// parseIP parses an IP address the way kube-proxy's netutils.ParseIPSloppy
// does: IPv4 octets may carry leading zeros (read as decimal, never octal),
// IPv4-mapped IPv6 addresses become IPv4, and zones are rejected.
func parseIP(s string) (netip.Addr, error) {
	if addr, err := netip.ParseAddr(s); err == nil {
		if addr.Zone() != "" {
			return netip.Addr{}, fmt.Errorf("IP address %q has a zone", s)
		}
		return addr.Unmap(), nil
	}
	if addr, ok := parseLegacyIPv4(s); ok {
		return addr, nil
	}
	return netip.Addr{}, fmt.Errorf("invalid IP address %q", s)
}

// parseLegacyIPv4 accepts dotted-quad IPv4 with leading zeros ("010.0.0.1"),
// which the Kubernetes API tolerates in old objects and netip rejects.
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		if p == "" || len(p) > 8 || strings.TrimLeft(p, "0123456789") != "" {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

// parsePrefix parses a CIDR the way kube-proxy's netutils.ParseCIDRSloppy
// does and returns the masked network, as net.ParseCIDR's IPNet is.
func parsePrefix(s string) (netip.Prefix, error) {
	addrPart, bitsPart, ok := strings.Cut(s, "/")
	if !ok {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: no prefix length", s)
	}
	addr, err := parseIP(addrPart)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
	}
	if bitsPart == "" || len(bitsPart) > 3 || strings.TrimLeft(bitsPart, "0123456789") != "" {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
	}
	bits, err := strconv.Atoi(bitsPart)
	if err != nil || bits > addr.BitLen() {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
	}
	return netip.PrefixFrom(addr, bits).Masked(), nil
}

// parseProtocol maps an API protocol to ours. The empty string is TCP, the
// API server's default: Decode fills it in (defaults.go), and a Snapshot
// built in code need not spell it out.
func parseProtocol(p string) (nodetable.Protocol, bool) {
	switch nodetable.Protocol(p) {
	case "", nodetable.TCP:
		return nodetable.TCP, true
	case nodetable.UDP, nodetable.SCTP:
		return nodetable.Protocol(p), true
	}
	return "", false
}

// validPort reports whether p is a usable port number.
func validPort(p int32) bool { return p >= 1 && p <= 65535 }
