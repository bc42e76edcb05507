package render

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// nftAffinitySetSize is the size nft gives a dynamic set that a rule in the
// same transaction updates; kube-proxy adds both in one sync, so the kernel
// lists its affinity sets with it.
const nftAffinitySetSize = 65535

// nftPlan is what kube-proxy's nftables syncProxyRules decides for one
// service port before it writes anything.
type nftPlan struct {
	sp      *nodetable.ServicePort
	proto   string // "tcp"
	port    string // the service port, "80"
	comment string // "ns/svc:port", for no-endpoint elements
	chains  nftServiceChains

	usesCluster, usesLocal, usesExternal, usesFW bool
	hasEndpoints, hasInternal, hasExternal       bool

	internal, externalPolicy         string // chains
	internalVerdict, externalVerdict string // for the no-endpoint maps
	epBase                           map[netip.AddrPort]string
}

func planNFT(sp *nodetable.ServicePort) *nftPlan {
	p := &nftPlan{
		sp: sp, proto: sp.Name.Protocol.Lower(), port: strconv.Itoa(int(sp.Port)),
		comment: truncateNFTComment(sp.Name.String()), chains: nftChainsFor(sp.Name),
		hasEndpoints: sp.HasEndpoints,
	}
	p.usesCluster, p.usesLocal = nftUsesCluster(sp), nftUsesLocal(sp)
	p.internal, p.hasInternal = p.chains.cluster, p.hasEndpoints
	if sp.InternalPolicyLocal {
		p.internal = p.chains.local
		p.hasInternal = p.hasInternal && len(sp.LocalEndpoints) > 0
	}
	p.externalPolicy, p.hasExternal = p.chains.cluster, p.hasEndpoints
	if sp.ExternalPolicyLocal {
		p.externalPolicy = p.chains.local
		p.hasExternal = p.hasExternal && len(sp.LocalEndpoints) > 0
	}
	p.usesExternal = p.hasEndpoints && sp.ExternallyAccessible()
	p.usesFW = len(sp.LoadBalancerVIPs) > 0 && len(sp.LoadBalancerSourceRanges) > 0
	switch {
	case !p.hasEndpoints:
		p.internalVerdict = "goto " + nftRejectChain
		p.externalVerdict = "goto " + nftRejectChain
	default:
		if !p.hasInternal {
			p.internalVerdict = "drop"
		}
		if !p.hasExternal {
			p.externalVerdict = "drop"
		}
	}
	if sp.SessionAffinity() {
		p.epBase = make(map[netip.AddrPort]string, len(sp.ReachableEndpoints))
		for _, ep := range sp.ReachableEndpoints {
			p.epBase[netip.AddrPortFrom(ep.IP, uint16(ep.Port))] = nftEndpointBase(sp.Name, ep)
		}
	}
	return p
}

// endpointBase returns the hashed base of an endpoint's chain and affinity set.
func (p *nftPlan) endpointBase(ep nodetable.Endpoint) string {
	if b, ok := p.epBase[netip.AddrPortFrom(ep.IP, uint16(ep.Port))]; ok {
		return b
	}
	return nftEndpointBase(p.sp.Name, ep)
}

// writeServicePort writes one service port's elements, chains and sets in
// the order kube-proxy's sync loop creates them.
func (s *nftState) writeServicePort(sp *nodetable.ServicePort) {
	p := planNFT(sp)
	affinity := sp.SessionAffinity()
	for _, ep := range sp.ReachableEndpoints {
		if affinity {
			s.chain(NFTPrefixEndpoint + p.endpointBase(ep))
		}
		if ep.Local {
			ip, port := ep.IP.String(), strconv.Itoa(int(ep.Port))
			s.hairpin.Elements = append(s.hairpin.Elements, nft.Element{Key: ip + " . " + ip + " . " + p.proto + " . " + port})
		}
	}
	if p.usesCluster {
		s.chain(p.chains.cluster)
	}
	if p.usesLocal {
		s.chain(p.chains.local)
	}
	if p.usesExternal {
		s.chain(p.chains.external)
	}
	if p.usesFW {
		s.chain(p.chains.firewall)
	}
	s.writeServiceElements(p)
	s.writeExternalChain(p)
	s.writeFirewallChain(p)
	if !affinity {
		for _, tg := range nftDNATTargets(sp) {
			chain := p.chains.cluster
			if tg.local {
				chain = p.chains.local
			}
			s.writeDNAT(p, chain, tg.local, tg.eps)
		}
		return
	}
	s.writeAffinity(p)
}

func elem(key, value, comment string) nft.Element {
	return nft.Element{Key: key, Value: value, Comment: comment}
}

// writeServiceElements fills cluster-ips, service-ips, firewall-ips,
// service-nodeports and the no-endpoint maps for one service port.
func (s *nftState) writeServiceElements(p *nftPlan) {
	sp := p.sp
	dest := func(ip netip.Addr) string { return ip.String() + " . " + p.proto + " . " + p.port }
	s.clusterIPs.Elements = append(s.clusterIPs.Elements, elem(sp.ClusterIP.String(), "", ""))
	if p.hasInternal {
		s.serviceIPs.Elements = append(s.serviceIPs.Elements, elem(dest(sp.ClusterIP), "goto "+p.internal, ""))
	} else {
		s.noEPServices.Elements = append(s.noEPServices.Elements, elem(dest(sp.ClusterIP), p.internalVerdict, p.comment))
	}
	external := "goto " + p.chains.external
	for _, ip := range sp.ExternalIPs {
		if p.hasEndpoints {
			s.serviceIPs.Elements = append(s.serviceIPs.Elements, elem(dest(ip), external, ""))
		}
		if !p.hasExternal {
			s.noEPServices.Elements = append(s.noEPServices.Elements, elem(dest(ip), p.externalVerdict, p.comment))
		}
	}
	for _, ip := range sp.LoadBalancerVIPs {
		if p.hasEndpoints {
			s.serviceIPs.Elements = append(s.serviceIPs.Elements, elem(dest(ip), external, ""))
		}
		if p.usesFW {
			s.firewallIPs.Elements = append(s.firewallIPs.Elements, elem(dest(ip), "goto "+p.chains.firewall, ""))
		}
	}
	if !p.hasExternal {
		for _, ip := range sp.LoadBalancerVIPs {
			s.noEPServices.Elements = append(s.noEPServices.Elements, elem(dest(ip), p.externalVerdict, p.comment))
		}
	}
	if sp.NodePort == 0 {
		return
	}
	key := p.proto + " . " + strconv.Itoa(int(sp.NodePort))
	if p.hasEndpoints {
		s.serviceNodePorts.Elements = append(s.serviceNodePorts.Elements, elem(key, external, ""))
	}
	if !p.hasExternal {
		s.noEPNodePorts.Elements = append(s.noEPNodePorts.Elements, elem(key, p.externalVerdict, p.comment))
	}
}

// writeExternalChain writes the external- chain: masquerade (Cluster
// policy) or the short-circuits for pod and host traffic (Local policy),
// then the jump to the external policy chain.
func (s *nftState) writeExternalChain(p *nftPlan) {
	if !p.usesExternal {
		return
	}
	ext := p.chains.external
	if !p.sp.ExternalPolicyLocal {
		s.rule(ext, s.masq+` comment "masquerade"`)
	} else {
		if s.local.ifLocal != "" {
			s.rule(ext, s.local.ifLocal+" goto "+p.chains.cluster+` comment "short-circuit pod traffic"`)
		}
		s.rule(ext, "fib saddr type local "+s.masq+` comment "masquerade local traffic"`)
		s.rule(ext, "fib saddr type local goto "+p.chains.cluster+` comment "short-circuit local traffic"`)
	}
	if p.hasExternal {
		s.rule(ext, "goto "+p.externalPolicy)
	}
}

// writeFirewallChain writes the firewall- chain: drop sources outside
// loadBalancerSourceRanges (and the LB IPs themselves when a range holds
// the node's IP, for VIPs that loop back locally).
func (s *nftState) writeFirewallChain(p *nftPlan) {
	if !p.usesFW {
		return
	}
	sources := append([]netip.Prefix(nil), p.sp.LoadBalancerSourceRanges...)
	allowFromNode := false
	for _, cidr := range p.sp.LoadBalancerSourceRanges {
		if cidr.Contains(s.nodeIP) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, ip := range p.sp.LoadBalancerVIPs {
			sources = append(sources, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	s.rule(p.chains.firewall, s.ipX+" saddr != "+nftAnonymousAddrSet(sources)+" drop")
}

// writeDNAT fills a service- or local- chain of a service without
// affinity: one DNAT, or numgen over an anonymous map of endpoints, or in
// the compact layout numgen over the chain's keys in its shared map.
func (s *nftState) writeDNAT(p *nftPlan, chain string, local bool, eps []nodetable.Endpoint) {
	if s.cfg.NFTablesLayout == NFTablesLayoutCompact {
		s.writeSharedDNAT(p, chain, local, eps)
		return
	}
	s.writeMapDNAT(p, chain, eps)
}

// writeMapDNAT is kube-proxy's DNAT: to the one endpoint, or by numgen
// over an anonymous map of them.
func (s *nftState) writeMapDNAT(p *nftPlan, chain string, eps []nodetable.Endpoint) {
	if len(eps) == 1 {
		s.rule(chain, "meta l4proto "+p.proto+" dnat to "+eps[0].String())
		return
	}
	var b strings.Builder
	b.WriteString("meta l4proto " + p.proto + " dnat " + s.ipX + " to numgen random mod " + strconv.Itoa(len(eps)) + " map { ")
	for i, ep := range eps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i) + " : " + ep.IP.String() + " . " + strconv.Itoa(int(ep.Port)))
	}
	b.WriteString(" }")
	s.rule(chain, b.String())
}

// writeCascade is the compact layout's choice of one of n endpoints under
// session affinity, a goto endpoint- chain each: rule i (of n) draws
// "numgen random mod n-i" and takes endpoint i on 0, so with probability
// 1/(n-i) of what reaches it, which makes every endpoint 1/n, as
// kube-proxy's map and iptables' statistic chain. The last rule takes the
// last endpoint unconditionally. The rules need no anonymous map, whose
// creation costs the kernel time that grows with the number of maps in
// the table (docs/PERFORMANCE.md); a new connection evaluates at most n
// rules, and only its first packet reaches the nat chains.
func (s *nftState) writeCascade(chain string, n int, take func(i int) string) {
	for i := range n - 1 {
		s.rule(chain, "numgen random mod "+strconv.Itoa(n-i)+" 0 "+take(i))
	}
	s.rule(chain, take(n-1))
}

// writeAffinity writes a ClientIP-affinity service's per-endpoint sets and
// chains and its dispatch: affinity lookups first, then numgen.
func (s *nftState) writeAffinity(p *nftPlan) {
	sp := p.sp
	timeout := time.Duration(sp.AffinityTimeoutSeconds) * time.Second
	for _, ep := range sp.ReachableEndpoints {
		s.set(NFTPrefixAffinity+p.endpointBase(ep), s.addrT, "", "")
		set := s.rs.Sets[len(s.rs.Sets)-1]
		set.Size, set.Timeout = nftAffinitySetSize, timeout
		set.Flags = []nft.SetFlag{nft.FlagDynamic, nft.FlagTimeout}
	}
	if p.usesCluster {
		s.writeJumps(p, p.chains.cluster, sp.ClusterEndpoints)
	}
	if p.usesLocal {
		s.writeJumps(p, p.chains.local, sp.LocalEndpoints)
	}
	for _, ep := range sp.ReachableEndpoints {
		base := p.endpointBase(ep)
		chain := NFTPrefixEndpoint + base
		s.rule(chain, "update @"+NFTPrefixAffinity+base+" { "+s.ipX+" saddr }")
		s.rule(chain, "meta l4proto "+p.proto+" dnat to "+ep.String())
	}
}

func (s *nftState) writeJumps(p *nftPlan, chain string, eps []nodetable.Endpoint) {
	for _, ep := range eps {
		base := p.endpointBase(ep)
		s.rule(chain, s.ipX+" saddr @"+NFTPrefixAffinity+base+" goto "+NFTPrefixEndpoint+base)
	}
	goTo := func(i int) string { return "goto " + NFTPrefixEndpoint + p.endpointBase(eps[i]) }
	if s.cfg.NFTablesLayout == NFTablesLayoutCompact {
		s.writeCascade(chain, len(eps), goTo)
		return
	}
	var b strings.Builder
	b.WriteString("numgen random mod " + strconv.Itoa(len(eps)) + " vmap { ")
	for i := range eps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i) + " : " + goTo(i))
	}
	b.WriteString(" }")
	s.rule(chain, b.String())
}
