package render

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// largeClusterEndpointsThreshold is kube-proxy's switch into "large cluster
// mode", where per-endpoint comments are left out to keep the ruleset small.
const largeClusterEndpointsThreshold = 1000

// jumpRule is one rule from a built-in chain into a kube-proxy chain.
type jumpRule struct {
	table   ipt.TableName
	from    string
	to      string
	comment string
	ctNew   bool
}

// iptablesJumps is kube-proxy's list of jump rules in the order it ensures
// them. Each is prepended to its built-in chain, so in the kernel a chain
// lists them in the reverse order (see builtinJumps).
var iptablesJumps = []jumpRule{
	{ipt.Filter, "INPUT", ChainExternalServices, "kubernetes externally-visible service portals", true},
	{ipt.Filter, "FORWARD", ChainExternalServices, "kubernetes externally-visible service portals", true},
	{ipt.Filter, "INPUT", ChainNodePorts, "kubernetes health check service ports", false},
	{ipt.Filter, "FORWARD", ChainServices, "kubernetes service portals", true},
	{ipt.Filter, "OUTPUT", ChainServices, "kubernetes service portals", true},
	{ipt.Filter, "FORWARD", ChainForward, "kubernetes forwarding rules", false},
	{ipt.Filter, "INPUT", ChainProxyFirewall, "kubernetes load balancer firewall", true},
	{ipt.Filter, "OUTPUT", ChainProxyFirewall, "kubernetes load balancer firewall", true},
	{ipt.Filter, "FORWARD", ChainProxyFirewall, "kubernetes load balancer firewall", true},
	{ipt.NAT, "OUTPUT", ChainServices, "kubernetes service portals", false},
	{ipt.NAT, "PREROUTING", ChainServices, "kubernetes service portals", false},
	{ipt.NAT, "POSTROUTING", ChainPostrouting, "kubernetes postrouting rules", false},
	// kubelet's own firewall chain, which kube-proxy ensures too.
	{ipt.Filter, "INPUT", ChainKubeletFirewall, "", false},
	{ipt.Filter, "OUTPUT", ChainKubeletFirewall, "", false},
}

// Fixed chains of each table, declared by every sync.
var (
	filterChains = []string{ChainServices, ChainExternalServices, ChainForward, ChainNodePorts, ChainProxyFirewall, ChainKubeletFirewall}
	natChains    = []string{ChainServices, ChainNodePorts, ChainPostrouting, ChainMarkMasq}
)

func (j jumpRule) rule() ipt.Rule {
	b := ipt.NewBuilder()
	if j.ctNew {
		b.Match("conntrack", "--ctstate NEW")
	}
	if j.comment != "" {
		b.Comment(j.comment)
	}
	return b.Jump(j.to).Rule()
}

// iptablesState accumulates the chains of one render. IPTablesRenderer
// replays a port's rules from an earlier render, of this node or another
// (plan --all-nodes): anything of the node that a port's rules read must be
// in iptablesMemoSetup's key, or checked per port there, or a port is
// replayed with another node's rules.
type iptablesState struct {
	t      *nodetable.ServiceTable
	cfg    *Config
	v6     bool
	mark   string
	local  localDetector
	np     nodePorts
	lhNP   bool // localhost NodePorts in effect
	large  bool
	filter map[string]*ipt.Chain
	nat    map[string]*ipt.Chain

	builder ipt.Builder
	epNames map[netip.AddrPort]endpointNames
	rec     *iptPortOutput                // what the port being written writes, for IPTablesRenderer
	order   map[ipt.TableName]*chainOrder // IPTablesRenderer's, or nil: sort each table
}

// rb returns the shared rule builder, emptied. Rules are composed one at a
// time, so one builder serves the whole render.
func (s *iptablesState) rb() *ipt.Builder { return s.builder.Reset() }

// IPTables renders kube-proxy v1.37's iptables-mode ruleset for one family:
// the filter and nat tables, with the jump rules from the built-in chains.
// Per-service rules in the dispatch chains (KUBE-SERVICES, KUBE-NODEPORTS,
// KUBE-EXTERNAL-SERVICES, KUBE-PROXY-FIREWALL) follow the table's order:
// by "namespace/name:port", then protocol. kube-proxy's own order there is
// Go map order.
func IPTables(t *nodetable.ServiceTable, cfg Config) *ipt.Ruleset {
	s := newIPTablesState(t, &cfg)
	s.writeFixedRules()
	for i := range t.Ports {
		s.writeServicePort(&t.Ports[i])
	}
	s.writeTrailingRules()
	return s.ruleset()
}

func newIPTablesState(t *nodetable.ServiceTable, cfg *Config) *iptablesState {
	return newIPTablesStateSized(t, cfg, 0, 0)
}

// newIPTablesStateSized is newIPTablesState with room for about as many
// filter and nat chains as a render before had.
func newIPTablesStateSized(t *nodetable.ServiceTable, cfg *Config, filter, nat int) *iptablesState {
	s := &iptablesState{
		t:       t,
		cfg:     cfg,
		v6:      t.Family == nodetable.IPv6,
		mark:    cfg.masqueradeMark(),
		local:   cfg.localDetector(t),
		np:      cfg.resolveNodePorts(t, NodePortAll),
		filter:  make(map[string]*ipt.Chain, filter),
		nat:     make(map[string]*ipt.Chain, nat),
		epNames: map[netip.AddrPort]endpointNames{},
	}
	s.lhNP = cfg.LocalhostNodePorts && s.np.containsIPv4Loopback && !s.v6
	total := 0
	for i := range t.Ports {
		total += len(t.Ports[i].AllEndpoints)
	}
	s.large = total > largeClusterEndpointsThreshold
	for _, c := range filterChains {
		s.filter[c] = &ipt.Chain{Name: c, Policy: "-"}
	}
	for _, c := range natChains {
		s.nat[c] = &ipt.Chain{Name: c, Policy: "-"}
	}
	return s
}

func (s *iptablesState) chains(table ipt.TableName) map[string]*ipt.Chain {
	if table == ipt.Filter {
		return s.filter
	}
	return s.nat
}

// chain returns a chain of the render, created empty if it is new. A
// chain a Service port creates is that port's own.
func (s *iptablesState) chain(table ipt.TableName, name string) *ipt.Chain {
	c, made := chainIn(s.chains(table), name)
	if made {
		s.rec.own(table, c)
	}
	return c
}

// chainIn returns the named chain of m, made empty if m has none.
func chainIn(m map[string]*ipt.Chain, name string) (c *ipt.Chain, made bool) {
	if c = m[name]; c == nil {
		c = &ipt.Chain{Name: name, Policy: "-"}
		m[name] = c
		made = true
	}
	return c, made
}

// add appends r to a chain of the render, recording it for the memo when
// a Service port is being written.
func (s *iptablesState) add(table ipt.TableName, chain string, r ipt.Rule) {
	c := s.chain(table, chain)
	c.Rules = append(c.Rules, r)
	s.rec.sharedRule(table, c, r)
}

func (s *iptablesState) addFilter(chain string, b *ipt.Builder) { s.add(ipt.Filter, chain, b.Rule()) }
func (s *iptablesState) addNAT(chain string, b *ipt.Builder)    { s.add(ipt.NAT, chain, b.Rule()) }

// declareNAT creates an (empty) nat chain.
func (s *iptablesState) declareNAT(chain string) { s.chain(ipt.NAT, chain) }

func (s *iptablesState) hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

func (s *iptablesState) loopback() netip.Prefix {
	if s.v6 {
		return netip.MustParsePrefix("::1/128")
	}
	return netip.MustParsePrefix("127.0.0.0/8")
}

// writeFixedRules writes KUBE-POSTROUTING, KUBE-MARK-MASQ and KUBE-FIREWALL.
func (s *iptablesState) writeFixedRules() {
	markMask := s.mark + "/" + s.mark
	s.addNAT(ChainPostrouting, s.rb().Match("mark", "! --mark "+markMask).Jump("RETURN"))
	s.addNAT(ChainPostrouting, s.rb().Jump("MARK", "--set-xmark "+s.mark+"/0x0"))
	s.addNAT(ChainPostrouting, s.rb().Comment("kubernetes service traffic requiring SNAT").Jump("MASQUERADE", "--random-fully"))
	s.addNAT(ChainMarkMasq, s.rb().Jump("MARK", "--set-xmark "+markMask))
	if s.lhNP {
		lo := s.loopback()
		s.addFilter(ChainKubeletFirewall, s.rb().
			Source(lo, true).Dest(lo, false).
			Comment("block incoming localnet connections").
			Match("conntrack", "! --ctstate RELATED,ESTABLISHED,DNAT").
			Jump("DROP"))
	}
}

// writeTrailingRules writes the NodePort tail-call of KUBE-SERVICES and the
// KUBE-FORWARD rules, which come after all per-service rules.
func (s *iptablesState) writeTrailingRules() {
	const comment = "kubernetes service nodeports; " + lastRuleMarker
	if s.np.matchAll {
		b := s.rb()
		if s.v6 || !s.lhNP {
			b.Dest(s.loopback(), true)
		}
		s.addNAT(ChainServices, b.Comment(comment).Match("addrtype", "--dst-type LOCAL").Jump(ChainNodePorts))
	} else {
		for _, ip := range s.np.ips {
			if ip.IsLoopback() && (s.v6 || !s.lhNP) {
				continue
			}
			s.addNAT(ChainServices, s.rb().Dest(s.hostPrefix(ip), false).Comment(comment).Jump(ChainNodePorts))
		}
	}
	if !s.cfg.ConntrackTCPBeLiberal {
		b := s.rb().Match("conntrack", "--ctstate INVALID")
		if s.cfg.NFAcct {
			b.Match("nfacct", "--nfacct-name  ct_state_invalid_dropped_pkts")
		}
		s.addFilter(ChainForward, b.Jump("DROP"))
	}
	markMask := s.mark + "/" + s.mark
	s.addFilter(ChainForward, s.rb().Comment("kubernetes forwarding rules").Match("mark", "--mark "+markMask).Jump("ACCEPT"))
	s.addFilter(ChainForward, s.rb().Comment("kubernetes forwarding conntrack rule").Match("conntrack", "--ctstate RELATED,ESTABLISHED").Jump("ACCEPT"))
}

// ruleset assembles the tables: built-in chains with their jump rules
// first, then every other chain sorted by name.
func (s *iptablesState) ruleset() *ipt.Ruleset {
	return &ipt.Ruleset{
		Family: s.t.Family,
		Tables: []*ipt.Table{
			s.assemble(ipt.Filter, s.filter),
			s.assemble(ipt.NAT, s.nat),
		},
	}
}

// assemble is assembleTable, in the order of the render before when the
// renderer keeps it.
func (s *iptablesState) assemble(name ipt.TableName, chains map[string]*ipt.Chain) *ipt.Table {
	o := s.order[name]
	if o == nil {
		return assembleTable(name, chains)
	}
	t := &ipt.Table{Name: name, Chains: BuiltinJumps(name)}
	t.Chains = append(t.Chains, o.sorted(chains)...)
	return t
}

func assembleTable(name ipt.TableName, chains map[string]*ipt.Chain) *ipt.Table {
	t := &ipt.Table{Name: name, Chains: BuiltinJumps(name)}
	custom := make([]*ipt.Chain, 0, len(chains))
	for _, c := range chains {
		custom = append(custom, c)
	}
	slices.SortFunc(custom, func(a, b *ipt.Chain) int { return strings.Compare(a.Name, b.Name) })
	t.Chains = append(t.Chains, custom...)
	return t
}

// BuiltinJumps returns, for one table, the built-in chains that hold
// kube-proxy's jump rules, each with those rules in kernel order. The chains'
// policies are not owned and are given as "-".
func BuiltinJumps(table ipt.TableName) []*ipt.Chain {
	var out []*ipt.Chain
	for _, name := range builtinOrder(table) {
		c := &ipt.Chain{Name: name, Policy: "-"}
		for i := len(iptablesJumps) - 1; i >= 0; i-- {
			j := iptablesJumps[i]
			if j.table == table && j.from == name {
				c.Rules = append(c.Rules, j.rule())
			}
		}
		if len(c.Rules) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func builtinOrder(table ipt.TableName) []string {
	if table == ipt.NAT {
		return []string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}
	}
	return []string{"INPUT", "FORWARD", "OUTPUT"}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// LocalhostNodePorts reports whether NodePorts answer on 127.0.0.1 for this
// table, which needs the route_localnet sysctl (IPv4 iptables mode only).
func LocalhostNodePorts(t *nodetable.ServiceTable, cfg Config) bool {
	np := cfg.resolveNodePorts(t, NodePortAll)
	return cfg.LocalhostNodePorts && np.containsIPv4Loopback && t.Family == nodetable.IPv4
}
