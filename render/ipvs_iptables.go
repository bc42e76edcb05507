package render

import (
	"net/netip"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// ipvsJumps is kube-proxy v1.37's ipvs iptablesJumpChain, in the order it
// ensures them; each is prepended, so a built-in chain lists them reversed.
var ipvsJumps = []jumpRule{
	{ipt.NAT, "OUTPUT", ChainServices, "kubernetes service portals", false},
	{ipt.NAT, "PREROUTING", ChainServices, "kubernetes service portals", false},
	{ipt.NAT, "POSTROUTING", ChainPostrouting, "kubernetes postrouting rules", false},
	{ipt.Filter, "FORWARD", ChainForward, "kubernetes forwarding rules", false},
	{ipt.Filter, "INPUT", IPVSChainNodePort, "kubernetes health check rules", false},
	{ipt.Filter, "INPUT", ChainProxyFirewall, "kube-proxy firewall rules", false},
	{ipt.Filter, "FORWARD", ChainProxyFirewall, "kube-proxy firewall rules", false},
	{ipt.Filter, "INPUT", IPVSChainFilter, "kubernetes ipvs access filter", false},
	{ipt.Filter, "OUTPUT", IPVSChainOutFilter, "kubernetes ipvs access filter", false},
}

// Fixed chains of each table in ipvs mode (kube-proxy's iptablesChains).
var (
	ipvsNATChains    = []string{ChainServices, ChainPostrouting, IPVSChainNodePort, IPVSChainLoadBalancer, ChainMarkMasq}
	ipvsFilterChains = []string{ChainForward, IPVSChainNodePort, ChainProxyFirewall, IPVSChainSourceRangesFirewall, IPVSChainFilter, IPVSChainOutFilter}
)

// ipvsSetRules is kube-proxy's ipsetWithIptablesChain: a rule per non-empty
// set, "[-p PROTO] -m comment --comment C -m set --match-set SET MATCH -j TO".
var ipvsSetRules = []struct {
	set   string
	table ipt.TableName
	from  string
	to    string
	match string
	proto string
}{
	{SetLoopBack, ipt.NAT, ChainPostrouting, "MASQUERADE", "dst,dst,src", ""},
	{SetLoadBalancer, ipt.NAT, ChainServices, IPVSChainLoadBalancer, "dst,dst", ""},
	{SetLoadBalancerLocal, ipt.NAT, IPVSChainLoadBalancer, "RETURN", "dst,dst", ""},
	{SetNodePortLocalTCP, ipt.NAT, IPVSChainNodePort, "RETURN", "dst", "tcp"},
	{SetNodePortTCP, ipt.NAT, IPVSChainNodePort, ChainMarkMasq, "dst", "tcp"},
	{SetNodePortLocalUDP, ipt.NAT, IPVSChainNodePort, "RETURN", "dst", "udp"},
	{SetNodePortUDP, ipt.NAT, IPVSChainNodePort, ChainMarkMasq, "dst", "udp"},
	{SetNodePortLocalSCTP, ipt.NAT, IPVSChainNodePort, "RETURN", "dst,dst", "sctp"},
	{SetNodePortSCTP, ipt.NAT, IPVSChainNodePort, ChainMarkMasq, "dst,dst", "sctp"},
	{SetLoadBalancerFW, ipt.Filter, ChainProxyFirewall, IPVSChainSourceRangesFirewall, "dst,dst", ""},
	{SetLoadBalancerSourceCIDR, ipt.Filter, IPVSChainSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
	{SetLoadBalancerSourceIP, ipt.Filter, IPVSChainSourceRangesFirewall, "RETURN", "dst,dst,src", ""},
}

var ipvsSetComments = func() map[string]string {
	m := map[string]string{}
	for _, info := range ipvsSetInfo {
		m[info.name] = info.comment
	}
	return m
}()

// ipvsRules holds the helper chains while they are written.
type ipvsRules struct {
	s      *ipvsState
	b      ipt.Builder
	filter map[string]*ipt.Chain
	nat    map[string]*ipt.Chain
}

func (r *ipvsRules) rb() *ipt.Builder { return r.b.Reset() }

func (r *ipvsRules) add(table ipt.TableName, chain string, b *ipt.Builder) {
	m := r.nat
	if table == ipt.Filter {
		m = r.filter
	}
	c, _ := chainIn(m, chain)
	c.Rules = append(c.Rules, b.Rule())
}

// matchSet adds "-m set --match-set NAME MATCH" with the family's set name.
func (r *ipvsRules) matchSet(b *ipt.Builder, set, match string) *ipt.Builder {
	return b.Match("set", "--match-set "+IPVSSetName(set, r.s.t.Family)+" "+match)
}

// commentSet starts a rule with the set's comment and its match.
func (r *ipvsRules) commentSet(set, match string) *ipt.Builder {
	return r.matchSet(r.rb().Comment(ipvsSetComments[set]), set, match)
}

// helperChains writes the iptables rules of kube-proxy's writeIptablesRules,
// chain by chain in the order it writes them.
func (s *ipvsState) helperChains() *ipt.Ruleset {
	r := &ipvsRules{s: s, filter: map[string]*ipt.Chain{}, nat: map[string]*ipt.Chain{}}
	for _, c := range ipvsNATChains {
		r.nat[c] = &ipt.Chain{Name: c, Policy: "-"}
	}
	for _, c := range ipvsFilterChains {
		r.filter[c] = &ipt.Chain{Name: c, Policy: "-"}
	}
	r.add(ipt.NAT, ChainServices, r.rb().Source(loopbackPrefix(s.t.Family), false).Jump("RETURN"))
	for _, sr := range ipvsSetRules {
		if !s.has(sr.set) {
			continue
		}
		b := r.rb()
		if sr.proto != "" {
			b.Protocol(sr.proto)
		}
		b.Comment(ipvsSetComments[sr.set])
		r.add(sr.table, sr.from, r.matchSet(b, sr.set, sr.match).Jump(sr.to))
	}
	r.writeServiceRules()
	r.writeFilterRules()
	r.writeMasqueradeRules()
	return &ipt.Ruleset{Family: s.t.Family, Tables: []*ipt.Table{
		r.assemble(ipt.Filter, r.filter),
		r.assemble(ipt.NAT, r.nat),
	}}
}

func loopbackPrefix(f nodetable.Family) netip.Prefix {
	if f == nodetable.IPv6 {
		return netip.MustParsePrefix("::1/128")
	}
	return netip.MustParsePrefix("127.0.0.0/8")
}

// writeServiceRules writes the rest of nat KUBE-SERVICES and KUBE-LOAD-BALANCER.
func (r *ipvsRules) writeServiceRules() {
	s := r.s
	if s.has(SetClusterIP) {
		switch local := s.cfg.localDetector(s.t); {
		case s.cfg.MasqueradeAll:
			r.add(ipt.NAT, ChainServices, r.commentSet(SetClusterIP, "dst,dst").Jump(ChainMarkMasq))
		case local.available:
			r.add(ipt.NAT, ChainServices, local.ifNotLocal(r.commentSet(SetClusterIP, "dst,dst")).Jump(ChainMarkMasq))
		default:
			r.add(ipt.NAT, ChainServices, r.commentSet(SetClusterIP, "src,dst").Jump(ChainMarkMasq))
		}
	}
	if s.has(SetExternalIP) {
		r.add(ipt.NAT, ChainServices, r.commentSet(SetExternalIP, "dst,dst").Jump(ChainMarkMasq))
		r.externalIPRules(SetExternalIP)
	}
	if s.has(SetExternalIPLocal) {
		r.externalIPRules(SetExternalIPLocal)
	}
	r.add(ipt.NAT, ChainServices, r.rb().Match("addrtype", "--dst-type LOCAL").Jump(IPVSChainNodePort))
	r.add(ipt.NAT, IPVSChainLoadBalancer, r.rb().Jump(ChainMarkMasq))
	// acceptIPVSTraffic
	for _, set := range []string{SetClusterIP, SetLoadBalancer} {
		if s.has(set) {
			r.add(ipt.NAT, ChainServices, r.matchSet(r.rb(), set, "dst,dst").Jump("ACCEPT"))
		}
	}
}

// externalIPRules accepts external-IP traffic from off the node and traffic
// to local addresses, so that it is not sent on to the NodePort chain.
func (r *ipvsRules) externalIPRules(set string) {
	r.add(ipt.NAT, ChainServices, r.commentSet(set, "dst,dst").
		Match("physdev", "! --physdev-is-in").Match("addrtype", "! --src-type LOCAL").Jump("ACCEPT"))
	r.add(ipt.NAT, ChainServices, r.commentSet(set, "dst,dst").
		Match("addrtype", "--dst-type LOCAL").Jump("ACCEPT"))
}

var ipvsProtoNumbers = map[string]string{"tcp": "6", "udp": "17", "sctp": "132"}

// writeFilterRules writes the filter table's rules after the set rules.
func (r *ipvsRules) writeFilterRules() {
	s := r.s
	r.add(ipt.Filter, IPVSChainSourceRangesFirewall, r.rb().Jump("DROP"))
	for _, e := range s.noNode {
		// iptables-save prints --vproto first and as a number, and --vaddr
		// without /32 (checked in the VM, where xt_ipvs loads).
		opts := "--vproto " + ipvsProtoNumbers[e.proto] + " --vaddr " + e.ip.String() + " --vport " + strconv.Itoa(int(e.port))
		r.add(ipt.Filter, IPVSChainOutFilter, r.rb().SourceAddr(e.ip).Match("ipvs", opts).Jump("DROP"))
	}
	markMask := s.cfg.masqueradeMark() + "/" + s.cfg.masqueradeMark()
	r.add(ipt.Filter, ChainForward, r.rb().Comment("kubernetes forwarding rules").Match("mark", "--mark "+markMask).Jump("ACCEPT"))
	r.add(ipt.Filter, ChainForward, r.rb().Comment("kubernetes forwarding conntrack rule").Match("conntrack", "--ctstate RELATED,ESTABLISHED").Jump("ACCEPT"))
	r.add(ipt.Filter, IPVSChainNodePort, r.commentSet(SetHealthCheckNodePort, "dst").Jump("ACCEPT"))
	for _, f := range []struct{ set, match string }{
		{SetLoadBalancer, "dst,dst"}, {SetClusterIP, "dst,dst"}, {SetExternalIP, "dst,dst"},
		{SetExternalIPLocal, "dst,dst"}, {SetHealthCheckNodePort, "dst"},
	} {
		r.add(ipt.Filter, IPVSChainFilter, r.matchSet(r.rb(), f.set, f.match).Jump("RETURN"))
	}
	reject := "--reject-with icmp-port-unreachable"
	if s.t.Family == nodetable.IPv6 {
		reject = "--reject-with icmp6-port-unreachable"
	}
	b := r.matchSet(r.rb().Match("conntrack", "--ctstate NEW"), SetIPVSIPs, "dst")
	r.add(ipt.Filter, IPVSChainFilter, b.Jump("REJECT", reject))
}

// writeMasqueradeRules writes KUBE-POSTROUTING's fixed tail and KUBE-MARK-MASQ,
// with --xor-mark and --or-mark spelled as iptables-save prints them.
func (r *ipvsRules) writeMasqueradeRules() {
	mark := r.s.cfg.masqueradeMark()
	markMask := mark + "/" + mark
	r.add(ipt.NAT, ChainPostrouting, r.rb().Match("mark", "! --mark "+markMask).Jump("RETURN"))
	r.add(ipt.NAT, ChainPostrouting, r.rb().Jump("MARK", "--set-xmark "+mark+"/0x0"))
	r.add(ipt.NAT, ChainPostrouting, r.rb().Comment("kubernetes service traffic requiring SNAT").Jump("MASQUERADE", "--random-fully"))
	r.add(ipt.NAT, ChainMarkMasq, r.rb().Jump("MARK", "--set-xmark "+markMask))
}

// assemble puts the built-in chains with their jump rules first, then the
// other chains sorted by name.
func (r *ipvsRules) assemble(name ipt.TableName, chains map[string]*ipt.Chain) *ipt.Table {
	t := assembleTable(name, chains)
	custom := t.Chains[len(BuiltinJumps(name)):]
	t.Chains = append(ipvsBuiltinJumps(name), custom...)
	return t
}

// ipvsBuiltinJumps returns the built-in chains holding the ipvs mode's
// jump rules, each with its rules in kernel order.
func ipvsBuiltinJumps(table ipt.TableName) []*ipt.Chain {
	var out []*ipt.Chain
	for _, name := range builtinOrder(table) {
		c := &ipt.Chain{Name: name, Policy: "-"}
		for i := len(ipvsJumps) - 1; i >= 0; i-- {
			if j := ipvsJumps[i]; j.table == table && j.from == name {
				c.Rules = append(c.Rules, j.rule())
			}
		}
		if len(c.Rules) > 0 {
			out = append(out, c)
		}
	}
	return out
}
