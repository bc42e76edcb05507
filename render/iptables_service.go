package render

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// svcPlan is what kube-proxy's syncProxyRules decides for one service port
// before it writes any rule.
type svcPlan struct {
	sp       *nodetable.ServicePort
	name     string // "ns/svc:port"
	proto    string // "tcp"
	chains   servicePortChains
	internal string // chain internal traffic goes to
	external string // the EXT chain
	lbTarget string // EXT, or FW when source ranges apply

	usesCluster, usesLocal, usesExternal, usesFW bool
	hasEndpoints, hasInternal, hasExternal       bool

	internalFilterTarget, internalFilterComment string
	externalFilterTarget, externalFilterComment string
}

func planServicePort(sp *nodetable.ServicePort) *svcPlan {
	p := &svcPlan{sp: sp, name: sp.Name.String(), proto: sp.Name.Protocol.Lower(), chains: chainsFor(sp.Name)}
	p.hasEndpoints = sp.HasEndpoints
	p.usesCluster = len(sp.ClusterEndpoints) > 0 && sp.UsesClusterEndpoints()
	p.usesLocal = len(sp.LocalEndpoints) > 0 && sp.UsesLocalEndpoints()

	p.internal, p.hasInternal = p.chains.cluster, p.hasEndpoints
	if sp.InternalPolicyLocal {
		p.internal = p.chains.local
		p.hasInternal = p.hasInternal && len(sp.LocalEndpoints) > 0
	}
	p.hasExternal = p.hasEndpoints
	if sp.ExternalPolicyLocal && len(sp.LocalEndpoints) == 0 {
		p.hasExternal = false
	}
	p.external = p.chains.external
	p.usesExternal = p.hasEndpoints && sp.ExternallyAccessible()
	p.lbTarget = p.external
	p.usesFW = p.hasEndpoints && len(sp.LoadBalancerVIPs) > 0 && len(sp.LoadBalancerSourceRanges) > 0
	if p.usesFW {
		p.lbTarget = p.chains.firewall
	}

	if !p.hasEndpoints {
		p.internalFilterTarget, p.internalFilterComment = "REJECT", p.name+" has no endpoints"
		p.externalFilterTarget, p.externalFilterComment = "REJECT", p.name+" has no endpoints"
		return p
	}
	if !p.hasInternal {
		p.internalFilterTarget, p.internalFilterComment = "DROP", p.name+" has no local endpoints"
	}
	if !p.hasExternal {
		p.externalFilterTarget, p.externalFilterComment = "DROP", p.name+" has no local endpoints"
	}
	return p
}

// externalPolicyChain is the chain that external traffic finally reaches.
func (p *svcPlan) externalPolicyChain() string {
	if p.sp.ExternalPolicyLocal {
		return p.chains.local
	}
	return p.chains.cluster
}

// endpointNames are the strings one endpoint of one service port needs,
// computed once per render of that port.
type endpointNames struct {
	addr  string // "ip:port"
	arrow string // "ns/svc:port -> ip:port"
	chain string // KUBE-SEP-...
}

func (s *iptablesState) names(p *svcPlan, ep nodetable.Endpoint) endpointNames {
	key := netip.AddrPortFrom(ep.IP, uint16(ep.Port))
	if n, ok := s.epNames[key]; ok {
		return n
	}
	addr := ep.String()
	n := endpointNames{addr: addr, arrow: p.name + " -> " + addr, chain: endpointChain(p.sp.Name, ep)}
	s.epNames[key] = n
	return n
}

func (s *iptablesState) writeServicePort(sp *nodetable.ServicePort) {
	clear(s.epNames)
	p := planServicePort(sp)
	s.writeDispatch(p)
	s.writeNodePorts(p)
	s.writeInternalChain(p)
	s.writeExternalChain(p)
	s.writeFirewallChain(p)
	if p.usesCluster {
		s.writeEndpointDispatch(p, p.chains.cluster, sp.ClusterEndpoints)
	}
	if p.usesLocal {
		s.writeEndpointDispatch(p, p.chains.local, sp.LocalEndpoints)
	}
	for _, ep := range sp.ReachableEndpoints {
		s.writeEndpointChain(p, ep)
	}
}

// dest starts a rule matching "-d addr -p proto ... --dport port" with comment.
func (s *iptablesState) dest(p *svcPlan, addr netip.Addr, port int32, comment string) *ipt.Builder {
	return s.rb().DestAddr(addr).Protocol(p.proto).Comment(comment).DPort(p.proto, port)
}

func (s *iptablesState) rejectTarget(b *ipt.Builder, target string) *ipt.Builder {
	if target != "REJECT" {
		return b.Jump(target)
	}
	if s.v6 {
		return b.Jump("REJECT", "--reject-with icmp6-port-unreachable")
	}
	return b.Jump("REJECT", "--reject-with icmp-port-unreachable")
}

// writeDispatch writes the KUBE-SERVICES, KUBE-EXTERNAL-SERVICES and
// KUBE-PROXY-FIREWALL rules for the ClusterIP, external IPs and LB IPs.
func (s *iptablesState) writeDispatch(p *svcPlan) {
	sp := p.sp
	if p.hasInternal {
		s.addNAT(ChainServices, s.dest(p, sp.ClusterIP, sp.Port, p.name+" cluster IP").Jump(p.internal))
	} else {
		s.addFilter(ChainServices, s.rejectTarget(s.dest(p, sp.ClusterIP, sp.Port, p.internalFilterComment), p.internalFilterTarget))
	}
	for _, ip := range sp.ExternalIPs {
		if p.hasEndpoints {
			s.addNAT(ChainServices, s.dest(p, ip, sp.Port, p.name+" external IP").Jump(p.external))
		}
		if !p.hasExternal {
			s.addFilter(ChainExternalServices, s.rejectTarget(s.dest(p, ip, sp.Port, p.externalFilterComment), p.externalFilterTarget))
		}
	}
	for _, ip := range sp.LoadBalancerVIPs {
		if p.hasEndpoints {
			s.addNAT(ChainServices, s.dest(p, ip, sp.Port, p.name+" loadbalancer IP").Jump(p.lbTarget))
		}
		if p.usesFW {
			comment := fmt.Sprintf("%s traffic not accepted by %s", p.name, p.chains.firewall)
			s.addFilter(ChainProxyFirewall, s.dest(p, ip, sp.Port, comment).Jump("DROP"))
		}
	}
	if !p.hasExternal {
		for _, ip := range sp.LoadBalancerVIPs {
			s.addFilter(ChainExternalServices, s.rejectTarget(s.dest(p, ip, sp.Port, p.externalFilterComment), p.externalFilterTarget))
		}
	}
}

// writeNodePorts writes the KUBE-NODEPORTS and health-check rules.
func (s *iptablesState) writeNodePorts(p *svcPlan) {
	sp := p.sp
	if sp.NodePort != 0 {
		if p.hasEndpoints {
			if s.lhNP && s.cfg.NFAcct {
				s.addNAT(ChainNodePorts, s.rb().Dest(s.loopback(), false).Protocol(p.proto).
					Comment(p.name).DPort(p.proto, sp.NodePort).
					Match("nfacct", "--nfacct-name  localhost_nps_accepted_pkts").Jump(p.external))
			}
			s.addNAT(ChainNodePorts, s.rb().Protocol(p.proto).Comment(p.name).DPort(p.proto, sp.NodePort).Jump(p.external))
		}
		if !p.hasExternal {
			b := s.rb().Protocol(p.proto).Comment(p.externalFilterComment).
				Match("addrtype", "--dst-type LOCAL").DPort(p.proto, sp.NodePort)
			s.addFilter(ChainExternalServices, s.rejectTarget(b, p.externalFilterTarget))
		}
	}
	if sp.HealthCheckNodePort != 0 {
		s.addFilter(ChainNodePorts, s.rb().Protocol("tcp").Comment(p.name+" health check node port").
			DPort("tcp", sp.HealthCheckNodePort).Jump("ACCEPT"))
	}
}

// writeInternalChain writes the masquerade rule at the head of the chain
// that ClusterIP traffic enters.
func (s *iptablesState) writeInternalChain(p *svcPlan) {
	if !p.hasInternal {
		return
	}
	b := s.dest(p, p.sp.ClusterIP, p.sp.Port, p.name+" cluster IP")
	switch {
	case s.cfg.MasqueradeAll:
	case s.local.available:
		s.local.ifNotLocal(b)
	default:
		return
	}
	s.addNAT(p.internal, b.Jump(ChainMarkMasq))
}

func (d localDetector) ifNotLocal(b *ipt.Builder) *ipt.Builder {
	if d.iface != "" {
		return b.InInterface(d.iface, true)
	}
	return b.Source(d.cidr, true)
}

func (d localDetector) ifLocal(b *ipt.Builder) *ipt.Builder {
	if d.iface != "" {
		return b.InInterface(d.iface, false)
	}
	return b.Source(d.cidr, false)
}

// writeExternalChain writes the KUBE-EXT chain: masquerade or short-circuit,
// then the jump to the external policy chain.
func (s *iptablesState) writeExternalChain(p *svcPlan) {
	if !p.usesExternal {
		return
	}
	ext := p.external
	s.declareNAT(ext)
	if !p.sp.ExternalPolicyLocal {
		s.addNAT(ext, s.rb().Comment("masquerade traffic for "+p.name+" external destinations").Jump(ChainMarkMasq))
	} else {
		if s.local.available {
			b := s.rb()
			s.local.ifLocal(b)
			s.addNAT(ext, b.Comment("pod traffic for "+p.name+" external destinations").Jump(p.chains.cluster))
		}
		s.addNAT(ext, s.rb().Comment("masquerade LOCAL traffic for "+p.name+" external destinations").
			Match("addrtype", "--src-type LOCAL").Jump(ChainMarkMasq))
		s.addNAT(ext, s.rb().Comment("route LOCAL traffic for "+p.name+" external destinations").
			Match("addrtype", "--src-type LOCAL").Jump(p.chains.cluster))
	}
	if p.hasExternal {
		s.addNAT(ext, s.rb().Jump(p.externalPolicyChain()))
	}
}

// writeFirewallChain writes the KUBE-FW chain for loadBalancerSourceRanges.
func (s *iptablesState) writeFirewallChain(p *svcPlan) {
	if !p.usesFW {
		return
	}
	fw := p.chains.firewall
	s.declareNAT(fw)
	comment := p.name + " loadbalancer IP"
	allowFromNode := false
	for _, cidr := range p.sp.LoadBalancerSourceRanges {
		s.addNAT(fw, s.rb().Source(cidr, false).Comment(comment).Jump(p.external))
		if cidr.Contains(primaryNodeIP(s.t)) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		for _, ip := range p.sp.LoadBalancerVIPs {
			s.addNAT(fw, s.rb().Source(s.hostPrefix(ip), false).Comment(comment).Jump(p.external))
		}
	}
	s.addNAT(fw, s.rb().Comment("other traffic to "+p.name+" will be dropped by KUBE-PROXY-FIREWALL"))
}

// writeEndpointDispatch fills a KUBE-SVC or KUBE-SVL chain: affinity checks
// first, then one random-probability jump per endpoint.
func (s *iptablesState) writeEndpointDispatch(p *svcPlan, chain string, eps []nodetable.Endpoint) {
	s.declareNAT(chain)
	if p.sp.SessionAffinity() {
		for _, ep := range eps {
			n := s.names(p, ep)
			sep := n.chain
			b := s.comment(s.rb(), n.arrow)
			b.Match("recent", "--rcheck --seconds "+itoa(p.sp.AffinityTimeoutSeconds)+" --reap --name "+sep+" "+s.recentMask()+" --rsource")
			s.addNAT(chain, b.Jump(sep))
		}
	}
	n := len(eps)
	for i, ep := range eps {
		names := s.names(p, ep)
		b := s.comment(s.rb(), names.arrow)
		if i < n-1 {
			b.Probability(oneIn(n - i))
		}
		s.addNAT(chain, b.Jump(names.chain))
	}
}

// writeEndpointChain writes one KUBE-SEP chain: hairpin masquerade, affinity
// bookkeeping and the DNAT.
func (s *iptablesState) writeEndpointChain(p *svcPlan, ep nodetable.Endpoint) {
	names := s.names(p, ep)
	sep := names.chain
	s.declareNAT(sep)
	s.addNAT(sep, s.comment(s.rb().SourceAddr(ep.IP), p.name).Jump(ChainMarkMasq))
	b := s.comment(s.rb().Protocol(p.proto), p.name)
	if p.sp.SessionAffinity() {
		b.Match("recent", "--set --name "+sep+" "+s.recentMask()+" --rsource")
	}
	s.addNAT(sep, b.ProtoMatch(p.proto).Jump("DNAT", "--to-destination "+names.addr))
}

// comment adds a per-endpoint comment unless the cluster is large.
func (s *iptablesState) comment(b *ipt.Builder, text string) *ipt.Builder {
	if s.large {
		return b
	}
	return b.Comment(text)
}

func (s *iptablesState) recentMask() string {
	if s.v6 {
		return "--mask ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	}
	return "--mask 255.255.255.255"
}

// oneIn returns 1/n as kube-proxy passes it to iptables: formatted with ten
// decimals, then parsed back.
func oneIn(n int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(1/float64(n), 'f', 10, 64), 64)
	return f
}
