package render

import (
	"fmt"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// nftBaseChain is one of kube-proxy's base chains, with its priority spelled
// as nft lists it (dstnat is only a name in prerouting, so in output
// kube-proxy's "dstnat-10" and "dstnat" list as -110 and -100).
type nftBaseChain struct {
	name     string
	typ      nft.ChainType
	hook     nft.Hook
	priority nft.Priority
}

// nftBaseChains is kube-proxy's nftablesBaseChains, in creation order.
var nftBaseChains = []nftBaseChain{
	{nftFilterPreDNATPre, nft.FilterType, nft.PreroutingHook, "dstnat - 10"},
	{nftFilterPreDNATOut, nft.FilterType, nft.OutputHook, "-110"},
	{nftFilterInput, nft.FilterType, nft.InputHook, "filter"},
	{nftFilterForward, nft.FilterType, nft.ForwardHook, "filter"},
	{nftFilterOutput, nft.FilterType, nft.OutputHook, "filter"},
	{nftNATPrerouting, nft.NATType, nft.PreroutingHook, "dstnat"},
	{nftNATOutput, nft.NATType, nft.OutputHook, "-100"},
	{nftNATPostrouting, nft.NATType, nft.PostroutingHook, "srcnat"},
}

// nftJump is one rule from a base chain into a top-level regular chain.
type nftJump struct {
	to, from string
	ctNew    bool
}

// nftJumps is kube-proxy's nftablesJumpChains, in order: each target chain
// is created the first time it appears, and each rule is appended to its
// base chain.
var nftJumps = []nftJump{
	{nftNodePortEPCheck, nftFilterInput, true},
	{nftServiceEPCheck, nftFilterInput, true},
	{nftServiceEPCheck, nftFilterForward, true},
	{nftServiceEPCheck, nftFilterOutput, true},
	{nftFirewallCheck, nftFilterPreDNATPre, true},
	{nftFirewallCheck, nftFilterPreDNATOut, true},
	{nftServicesChain, nftNATOutput, false},
	{nftServicesChain, nftNATPrerouting, false},
	{nftMasqueradingChain, nftNATPostrouting, false},
	{nftClusterIPsCheck, nftFilterForward, true},
	{nftClusterIPsCheck, nftFilterOutput, true},
}

// nftState accumulates one render.
type nftState struct {
	t      *nodetable.ServiceTable
	cfg    *Config
	ipX    string // "ip" or "ip6"
	addrT  string // "ipv4_addr" or "ipv6_addr"
	masq   string // the masquerade statement, as nft lists it
	np     nodePorts
	nodeIP netip.Addr
	local  nftLocal
	rs     *nft.Ruleset
	chains map[string]*nft.Chain

	hairpin, clusterIPs, nodePortIPs         *nft.Set
	noEPServices, noEPNodePorts, firewallIPs *nft.Set
	serviceIPs, serviceNodePorts             *nft.Set

	// The compact layout's shared maps of endpoints by number (nil where
	// unused), and every DNAT chain's offset in them
	// (nftables_compact.go).
	endpoints []*nft.Set
	offsets   map[nftDNATKey]uint32
	keyRuns   [][]nftKeyRun // each map's elements, by chain
	// recording collects what a port adds to the shared maps while the
	// memoizing renderer records it.
	recording *nftPortOutput
}

// nftLocal is the local-traffic detector as nft match expressions.
type nftLocal struct {
	ifLocal, ifNotLocal string // empty when not available
}

// NFTables renders kube-proxy v1.37's nftables-mode table for one family:
// table kube-proxy in family ip or ip6, as `nft list table` prints it after
// kube-proxy's first full sync. Sets, maps and chains come in kube-proxy's
// creation order; the per-service objects follow the table's order (by
// "namespace/name:port", then protocol), where kube-proxy's own order is Go
// map order. Elements are sorted as nft.Ruleset.SortElements sorts them;
// where two Service ports claim one key, the first in table order wins.
func NFTables(t *nodetable.ServiceTable, cfg Config) *nft.Ruleset {
	s := newNFTState(t, &cfg)
	s.writeSkeleton()
	for i := range t.Ports {
		s.writeServicePort(&t.Ports[i])
	}
	s.sortSets()
	return s.rs
}

// sortSets puts every set's elements in order, the first Service port in
// table order keeping a contested key (sortDedupe), and fills the compact
// layout's maps, whose keys no two ports share, in order.
func (s *nftState) sortSets() { s.sortSetsWith(sortDedupe, joinRuns) }

// sortSetsWith is sortSets with sort in place of sortDedupe and join in
// place of joinRuns.
func (s *nftState) sortSetsWith(sort func(*nft.Set), join func(i int, runs []nftKeyRun) []nft.Element) {
	for _, set := range s.rs.Sets {
		sort(set)
	}
	s.fillEndpointsMaps(join)
}

func newNFTState(t *nodetable.ServiceTable, cfg *Config) *nftState {
	s := &nftState{
		t:      t,
		cfg:    cfg,
		ipX:    "ip",
		addrT:  "ipv4_addr",
		np:     cfg.resolveNodePorts(t, NodePortPrimary),
		chains: map[string]*nft.Chain{},
	}
	s.masq = "meta mark set meta mark | " + nftMark(cfg.MasqueradeBit)
	s.nodeIP = primaryNodeIP(t)
	if t.Family == nodetable.IPv6 {
		s.ipX, s.addrT = "ip6", "ipv6_addr"
	}
	s.local = s.localDetector()
	family := nft.IPv4
	if t.Family == nodetable.IPv6 {
		family = nft.IPv6
	}
	s.rs = &nft.Ruleset{Family: family, Table: NFTablesTable, Comment: nftTableComment}
	return s
}

// nftMark spells the masquerade mark as nft lists it: 0x%08x.
func nftMark(bit int) string { return fmt.Sprintf("0x%08x", uint32(1)<<bit) }

func (s *nftState) localDetector() nftLocal {
	switch s.cfg.DetectLocalMode {
	case LocalModeBridgeInterface:
		q := nft.QuoteString(s.cfg.BridgeInterface)
		return nftLocal{ifLocal: "iifname " + q, ifNotLocal: "iifname != " + q}
	case LocalModeInterfaceNamePrefix:
		q := nft.QuoteString(s.cfg.InterfaceNamePrefix + "*")
		return nftLocal{ifLocal: "iifname " + q, ifNotLocal: "iifname != " + q}
	}
	d := s.cfg.localDetector(s.t)
	if !d.available {
		return nftLocal{}
	}
	c := nftAddr(d.cidr)
	return nftLocal{ifLocal: s.ipX + " saddr " + c, ifNotLocal: s.ipX + " saddr != " + c}
}

// chain creates a chain, once, after the chains created before it.
func (s *nftState) chain(name string) *nft.Chain {
	if c := s.chains[name]; c != nil {
		return c
	}
	c := &nft.Chain{Name: name}
	s.chains[name] = c
	s.rs.Chains = append(s.rs.Chains, c)
	return c
}

func (s *nftState) rule(chain string, rule string) {
	c := s.chains[chain]
	c.Rules = append(c.Rules, nft.Rule(rule))
}

func (s *nftState) set(name, typ, dataType, comment string) *nft.Set {
	set := &nft.Set{Name: name, Type: typ, DataType: dataType, Comment: comment}
	s.rs.Sets = append(s.rs.Sets, set)
	return set
}

// writeSkeleton writes what kube-proxy's setupNFTables writes, in its order.
func (s *nftState) writeSkeleton() {
	for _, bc := range nftBaseChains {
		s.chain(bc.name).Base = &nft.BaseChain{Type: bc.typ, Hook: bc.hook, Priority: bc.priority, Policy: nft.Accept}
	}
	for _, j := range nftJumps {
		s.chain(j.to)
		if j.ctNew {
			s.rule(j.from, "ct state new jump "+j.to)
		} else {
			s.rule(j.from, "jump "+j.to)
		}
	}
	ipX, addrT := s.ipX, s.addrT
	s.hairpin = s.set(nftHairpinSet, addrT+" . "+addrT+" . inet_proto . inet_service", "", "service hairpin connections")
	markOnly := nftMark(s.cfg.MasqueradeBit)
	s.rule(nftMasqueradingChain, "meta mark & "+markOnly+" != 0x00000000 meta mark set meta mark ^ "+markOnly+" masquerade fully-random")
	s.rule(nftMasqueradingChain, "ct status dnat "+ipX+" saddr . "+ipX+" daddr . meta l4proto . th dport @"+nftHairpinSet+" masquerade fully-random")
	s.clusterIPs = s.set(nftClusterIPsSet, addrT, "", "Active ClusterIPs")
	s.rule(nftClusterIPsCheck, ipX+" daddr @"+nftClusterIPsSet+` reject comment "Reject traffic to invalid ports of ClusterIPs"`)
	if len(s.t.ServiceCIDRs) > 0 {
		s.rule(nftClusterIPsCheck, ipX+" daddr "+nftAnonymousAddrSet(s.t.ServiceCIDRs)+` drop comment "Drop traffic to unallocated ClusterIPs"`)
	}
	if !s.np.matchAll {
		s.nodePortIPs = s.set(nftNodePortIPsSet, addrT, "", "IPs that accept NodePort traffic")
		for _, ip := range s.np.ips {
			if !ip.IsLoopback() {
				s.nodePortIPs.Elements = append(s.nodePortIPs.Elements, nft.Element{Key: ip.String()})
			}
		}
	}
	s.noEPServices = s.set(nftNoEndpointSvcMap, addrT+" . inet_proto . inet_service", "verdict", "vmap to drop or reject packets to services with no endpoints")
	s.noEPNodePorts = s.set(nftNoEndpointNPMap, "inet_proto . inet_service", "verdict", "vmap to drop or reject packets to service nodeports with no endpoints")
	s.chain(nftRejectChain).Comment = "helper for @no-endpoint-services / @no-endpoint-nodeports"
	s.rule(nftRejectChain, "reject")
	s.rule(nftServiceEPCheck, ipX+" daddr . meta l4proto . th dport vmap @"+nftNoEndpointSvcMap)
	s.rule(nftNodePortEPCheck, s.nodePortMatch()+" meta l4proto . th dport vmap @"+nftNoEndpointNPMap)
	s.firewallIPs = s.set(nftFirewallIPsMap, addrT+" . inet_proto . inet_service", "verdict", "destinations that are subject to LoadBalancerSourceRanges")
	s.rule(nftFirewallCheck, ipX+" daddr . meta l4proto . th dport vmap @"+nftFirewallIPsMap)
	s.serviceIPs = s.set(nftServiceIPsMap, addrT+" . inet_proto . inet_service", "verdict", "ClusterIP, ExternalIP and LoadBalancer IP traffic")
	s.serviceNodePorts = s.set(nftServiceNodePorts, "inet_proto . inet_service", "verdict", "NodePort traffic")
	s.writeEndpointsMaps()
	s.writeServicesChain()
}

// nodePortMatch matches the destinations that accept NodePort traffic.
func (s *nftState) nodePortMatch() string {
	if s.np.matchAll {
		return s.ipX + " daddr != " + s.loopback()
	}
	return s.ipX + " daddr @" + nftNodePortIPsSet
}

// loopback is how kube-proxy spells the loopback range it excludes.
func (s *nftState) loopback() string {
	if s.t.Family == nodetable.IPv6 {
		return "::1"
	}
	return "127.0.0.0/8"
}

func (s *nftState) writeServicesChain() {
	ipX := s.ipX
	switch {
	case s.cfg.MasqueradeAll:
		s.rule(nftServicesChain, ipX+" daddr @"+nftClusterIPsSet+" "+s.masq+` comment "masquerade all clusterIP traffic"`)
	case s.local.ifNotLocal != "":
		s.rule(nftServicesChain, ipX+" daddr @"+nftClusterIPsSet+" "+s.local.ifNotLocal+" "+s.masq+
			` comment "masquerade clusterIP traffic from outside cluster"`)
	}
	s.rule(nftServicesChain, ipX+" daddr . meta l4proto . th dport vmap @"+nftServiceIPsMap)
	nodePorts := s.nodePortMatch()
	if s.np.matchAll {
		nodePorts = "fib daddr type local " + nodePorts
	}
	s.rule(nftServicesChain, nodePorts+" meta l4proto . th dport vmap @"+nftServiceNodePorts)
}

// sortDedupe sorts a set's elements and drops every element whose key
// repeats an earlier one's, so that the first Service port in table order
// keeps a contested key.
func sortDedupe(set *nft.Set) {
	set.SortElements()
	out := set.Elements[:0]
	for i, e := range set.Elements {
		if i > 0 && e.Key == out[len(out)-1].Key {
			continue
		}
		out = append(out, e)
	}
	set.Elements = out
}
