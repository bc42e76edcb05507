package userspace

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// parsePort reads one port line (see Encode).
func parsePort(line string) (Port, error) {
	f := strings.Split(line, " ")
	if len(f) != 6 {
		return Port{}, fmt.Errorf("want 6 space-separated fields, found %d", len(f))
	}
	name, err := parseName(f[0], f[1])
	if err != nil {
		return Port{}, err
	}
	p := Port{Name: name}
	if p.Portal, err = netip.ParseAddrPort(f[2]); err != nil {
		return Port{}, fmt.Errorf("portal: %w", err)
	}
	proxyPort, err := strconv.ParseUint(f[3], 10, 16)
	if err != nil {
		return Port{}, fmt.Errorf("proxy port %q: not in 0..65535", f[3])
	}
	p.ProxyPort = uint16(proxyPort)
	affinity, err := strconv.ParseInt(f[4], 10, 32)
	if err != nil || affinity < 0 {
		return Port{}, fmt.Errorf("affinity seconds %q: not a non-negative 32-bit number", f[4])
	}
	p.AffinityTimeoutSeconds = int32(affinity)
	if f[5] == "-" {
		return p, nil
	}
	for _, s := range strings.Split(f[5], ",") {
		ep, err := netip.ParseAddrPort(s)
		if err != nil {
			return Port{}, fmt.Errorf("endpoint: %w", err)
		}
		p.Endpoints = append(p.Endpoints, ep)
	}
	return p, nil
}

// parseName reads "namespace/name[:port]" and a lower-case protocol.
func parseName(s, proto string) (nodetable.ServicePortName, error) {
	var n nodetable.ServicePortName
	switch proto {
	case "tcp":
		n.Protocol = nodetable.TCP
	case "udp":
		n.Protocol = nodetable.UDP
	case "sctp":
		n.Protocol = nodetable.SCTP
	default:
		return n, fmt.Errorf("protocol %q: want tcp, udp or sctp", proto)
	}
	ns, rest, ok := strings.Cut(s, "/")
	if !ok || ns == "" {
		return n, fmt.Errorf("service port %q: want namespace/name[:port]", s)
	}
	name, port, _ := strings.Cut(rest, ":")
	if name == "" {
		return n, fmt.Errorf("service port %q: empty name", s)
	}
	n.Namespace, n.Name, n.Port = ns, name, port
	return n, nil
}
