// Package trace follows one packet through a proxy mode's ruleset, held as
// data, and says what the node does with it: where it enters, which rules
// it meets in which order, and the outcome (DNAT to an endpoint set with
// each endpoint's probability, dropped, rejected, or left alone), with
// masquerading and session affinity.
//
// This package holds what every mode shares: the packet, the inference of
// its entry point, the per-branch state a mode's evaluator threads through
// its rules, the order of the netfilter hooks, and the Result with its
// stable JSON contract (docs/TRACE.md). It does no I/O. The per-mode
// evaluators live in trace/iptables, trace/nftables, trace/ipvs and
// trace/userspace.
package trace

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Packet is the first packet of a new connection.
type Packet struct {
	Src      netip.Addr `json:"source"`
	Dst      netip.Addr `json:"destination"`
	Port     uint16     `json:"port"`
	Protocol string     `json:"protocol"`
}

// ParseError is a bad --from, --to or --protocol: the CLI exits 2 with it.
type ParseError struct {
	What, Value, Problem string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.What, e.Value, e.Problem)
}

// ParseProtocol accepts tcp, udp and sctp in any case.
func ParseProtocol(s string) (string, error) {
	switch p := strings.ToLower(s); p {
	case "tcp", "udp", "sctp":
		return p, nil
	}
	return "", &ParseError{What: "protocol", Value: s, Problem: "must be tcp, udp or sctp"}
}

// ParseAddr parses an IP address (IPv4-mapped IPv6 is taken as IPv4).
func ParseAddr(what, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, &ParseError{What: what, Value: s, Problem: "not an IP address"}
	}
	return a.Unmap(), nil
}

// ParseDest parses DST:PORT, [IPv6]:PORT, or IPv6 with the port after the
// last colon when unbracketed and unambiguous is impossible (so brackets
// are required for IPv6).
func ParseDest(s string) (netip.Addr, uint16, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return netip.Addr{}, 0, &ParseError{What: "--to", Value: s, Problem: "must be ADDRESS:PORT ([ADDRESS]:PORT for IPv6)"}
	}
	host, port := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return netip.Addr{}, 0, &ParseError{What: "--to", Value: s, Problem: "an IPv6 address needs brackets: [ADDRESS]:PORT"}
	}
	a, err := ParseAddr("--to", host)
	if err != nil {
		return netip.Addr{}, 0, err
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return netip.Addr{}, 0, &ParseError{What: "--to", Value: s, Problem: "port " + strconv.Quote(port) + " out of range 1-65535"}
	}
	return a, uint16(n), nil
}

// Via is where a packet enters the node's netfilter hooks.
type Via string

const (
	// ViaPod is a packet from a pod on this node: PREROUTING, then INPUT
	// or FORWARD, then POSTROUTING.
	ViaPod Via = "pod"
	// ViaNode is a packet the node itself sends: OUTPUT, then POSTROUTING.
	ViaNode Via = "node"
	// ViaExternal arrives on the node's interface from elsewhere:
	// PREROUTING, then INPUT or FORWARD, then POSTROUTING.
	ViaExternal Via = "external"
)

// ParseVia accepts pod, node and external.
func ParseVia(s string) (Via, error) {
	switch v := Via(strings.ToLower(s)); v {
	case ViaPod, ViaNode, ViaExternal:
		return v, nil
	}
	return "", &ParseError{What: "--via", Value: s, Problem: "must be pod, node or external"}
}
