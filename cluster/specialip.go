package cluster

import (
	"fmt"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Addresses no Service can use. The API server refuses some of them as an
// endpoint address or an externalIP (ValidateEndpointIP: unspecified,
// loopback, link-local, link-local multicast); it accepts the others,
// multicast and the IPv4 broadcast address, where a rule to them would
// catch the node's own multicast or broadcast traffic. Neither kind is
// used anywhere a Service's traffic is sent to or sent on: clusterIPs,
// externalIPs, load-balancer IPs and endpoints (docs/INPUT.md).

var broadcast4 = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// specialIP names what kind of address no Service can use ip is, "" for
// an ordinary one, and whether the API server's ValidateEndpointIP
// refuses it.
func specialIP(ip netip.Addr) (kind string, apiRefuses bool) {
	switch {
	case ip.IsUnspecified():
		return "unspecified", true
	case ip.IsLoopback():
		return "a loopback address", true
	case ip.IsLinkLocalUnicast():
		return "a link-local address", true
	case ip.IsLinkLocalMulticast():
		return "a link-local multicast address", true
	case ip.IsMulticast():
		return "a multicast address", false
	case ip == broadcast4:
		return "the broadcast address", false
	}
	return "", false
}

// unusableIP says why an address is not used ("is a loopback address,
// which the API server refuses"), or "" when it is. apiChecked is whether
// the API server checks the field with ValidateEndpointIP (endpoints and
// externalIPs), so that the message says who refuses it.
func unusableIP(ip netip.Addr, apiChecked bool) string {
	kind, apiRefuses := specialIP(ip)
	switch {
	case kind == "":
		return ""
	case apiChecked && apiRefuses:
		return "is " + kind + ", which the API server refuses"
	}
	return "is " + kind + ", which no Service can use"
}

// specialPrefixes are the ranges of specialIP, per family: a ServiceCIDR
// that overlaps one would drop the node's traffic there that is not to
// a Service.
var specialPrefixes = map[nodetable.Family][]netip.Prefix{
	nodetable.IPv4: {
		netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("224.0.0.0/4"),
		netip.MustParsePrefix("255.255.255.255/32"),
	},
	nodetable.IPv6: {
		netip.MustParsePrefix("::/128"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("fe80::/10"), netip.MustParsePrefix("ff00::/8"),
	},
}

// Widest ServiceCIDRs used. The API server allocates no clusterIP from
// an IPv6 ServiceCIDR wider than /64 (its allocator refuses one); for
// IPv4 it sets no bound, and /8 is the tool's: no private range is wider,
// and a wider ServiceCIDR claims address space the node must reach.
var minServiceCIDRBits = map[nodetable.Family]int{nodetable.IPv4: 8, nodetable.IPv6: 64}

// serviceCIDRProblem says why a ServiceCIDR is not used, or "" when it
// is. nftables mode drops what is sent into a ServiceCIDR and is not a
// Service's, the node's own traffic included; so a ServiceCIDR must not
// hold the node's own addresses, nor addresses no Service can have.
func serviceCIDRProblem(p netip.Prefix, nodeIPs []netip.Addr) string {
	f := nodetable.FamilyOf(p.Addr())
	if bits := minServiceCIDRBits[f]; p.Bits() < bits {
		return fmt.Sprintf("is wider than /%d", bits)
	}
	for _, ip := range nodeIPs {
		if p.Contains(ip) {
			return fmt.Sprintf("holds the node's IP %s", ip)
		}
	}
	for _, s := range specialPrefixes[f] {
		if p.Overlaps(s) {
			kind, _ := specialIP(s.Addr())
			return fmt.Sprintf("overlaps %s (%s)", s, kind)
		}
	}
	return ""
}
