package render

import (
	"net/netip"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// portalMatch says which of v1.25's iptablesCommonPortalArgs extras a rule has.
type portalMatch struct {
	physdev  bool // "-m physdev ! --physdev-is-in": not bridged from a local pod
	dstLocal bool // "-m addrtype --dst-type LOCAL"
}

// writePortals writes one Service port's rules, as v1.25's openPortal did:
// the ClusterIP portal, one per external IP, one per load-balancer IP, then
// the NodePort. Each portal's rules are appended in v1.25's order.
func (s *userspaceState) writePortals(sp *nodetable.ServicePort, proxyPort uint16) {
	s.writeOnePortal(sp, sp.ClusterIP, false, proxyPort)
	for _, ip := range sp.ExternalIPs {
		s.writeOnePortal(sp, ip, true, proxyPort)
	}
	for _, ip := range sp.LoadBalancerVIPs {
		s.writeOnePortal(sp, ip, false, proxyPort)
	}
	if sp.NodePort != 0 {
		s.writeNodePort(sp, proxyPort)
	}
}

// writeOnePortal is v1.25's openOnePortal. An external IP (isExternal)
// gets three rules instead of two: from containers only for packets that
// were not bridged (physdev), so that pods reach an external IP hosted
// elsewhere directly; from containers again when the external IP is an
// address of this node (addrtype LOCAL); and from the host only in that
// case. v1.25 also held the port open on an external IP that was a local
// address (claimNodePort); that socket is the proxy process's business.
func (s *userspaceState) writeOnePortal(sp *nodetable.ServicePort, ip netip.Addr, isExternal bool, proxyPort uint16) {
	s.add(userspace.ChainPortalsContainer, s.containerRule(sp, ip, sp.Port, portalMatch{physdev: isExternal}, proxyPort))
	if isExternal {
		s.add(userspace.ChainPortalsContainer, s.containerRule(sp, ip, sp.Port, portalMatch{dstLocal: true}, proxyPort))
	}
	s.add(userspace.ChainPortalsHost, s.hostRule(sp, ip, sp.Port, portalMatch{dstLocal: isExternal}, proxyPort))
}

// writeNodePort is v1.25's openNodePort: no destination match (the jump
// into these chains checks addrtype LOCAL), and an ACCEPT of new
// connections to the proxy port in filter.
func (s *userspaceState) writeNodePort(sp *nodetable.ServicePort, proxyPort uint16) {
	none := netip.Addr{}
	s.add(userspace.ChainNodePortContainer, s.containerRule(sp, none, sp.NodePort, portalMatch{}, proxyPort))
	s.add(userspace.ChainNodePortHost, s.hostRule(sp, none, sp.NodePort, portalMatch{}, proxyPort))
	b := s.portalArgs(sp, none, int32(proxyPort), portalMatch{})
	s.add(userspace.ChainNodePortNonLocal, b.Match("state", "--state NEW").Jump("ACCEPT").Rule())
}

// portalArgs is v1.25's iptablesCommonPortalArgs, in iptables-save order:
// "-d IP/32 -p PROTO -m comment --comment NAME -m PROTO --dport PORT" and
// the extras. The comment is the Service port name without the protocol.
func (s *userspaceState) portalArgs(sp *nodetable.ServicePort, ip netip.Addr, port int32, m portalMatch) *ipt.Builder {
	proto := sp.Name.Protocol.Lower()
	b := s.b.Reset()
	if ip.IsValid() {
		b.DestAddr(ip)
	}
	b.Protocol(proto).Comment(sp.Name.String()).DPort(proto, port)
	if m.physdev {
		b.Match("physdev", "! --physdev-is-in")
	}
	if m.dstLocal {
		b.Match("addrtype", "--dst-type LOCAL")
	}
	return b
}

// containerRule is v1.25's iptablesContainerPortalArgs: with the proxy on
// every interface, REDIRECT (to the incoming interface's primary address);
// bound to one address, DNAT to it.
func (s *userspaceState) containerRule(sp *nodetable.ServicePort, ip netip.Addr, port int32, m portalMatch, proxyPort uint16) ipt.Rule {
	b := s.portalArgs(sp, ip, port, m)
	if s.redirect {
		return b.Jump("REDIRECT", "--to-ports "+strconv.Itoa(int(proxyPort))).Rule()
	}
	return b.Jump("DNAT", "--to-destination "+netip.AddrPortFrom(s.listen, proxyPort).String()).Rule()
}

// hostRule is v1.25's iptablesHostPortalArgs and iptablesHostNodePortArgs:
// always DNAT, to the listen address or, when that is unspecified, to the
// host IP (REDIRECT of local traffic goes to loopback, which v1.25 found
// to break replies).
func (s *userspaceState) hostRule(sp *nodetable.ServicePort, ip netip.Addr, port int32, m portalMatch, proxyPort uint16) ipt.Rule {
	b := s.portalArgs(sp, ip, port, m)
	return b.Jump("DNAT", "--to-destination "+netip.AddrPortFrom(s.host, proxyPort).String()).Rule()
}
