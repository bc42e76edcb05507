package render

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// IPVSOptions are kube-proxy's ipvs-mode settings (KubeProxyIPVSConfiguration).
type IPVSOptions struct {
	// Scheduler is the IPVS scheduler (--ipvs-scheduler); empty means "rr".
	Scheduler string `json:"scheduler,omitempty"`
}

// Validate checks the scheduler name against kube-proxy v1.37's list.
func (o IPVSOptions) Validate() error {
	if o.Scheduler != "" && !slices.Contains(ipvsSchedulers, o.Scheduler) {
		return &SettingError{Setting: "scheduler", Value: fmt.Sprintf("%q", o.Scheduler), Problem: fmt.Sprintf("must be one of %v", ipvsSchedulers)}
	}
	return nil
}

func (o IPVSOptions) scheduler() string {
	if o.Scheduler == "" {
		return DefaultIPVSScheduler
	}
	return o.Scheduler
}

type vsKey struct {
	proto ipvs.Protocol
	ap    netip.AddrPort
}

// lbEntry is a load-balancer IP:port that the node itself may not reach
// (kube-proxy's lbNoNodeAccessIPPortProtocolEntries).
type lbEntry struct {
	ip    netip.Addr
	proto string
	port  int32
}

// ipvsState accumulates one render.
type ipvsState struct {
	t         *nodetable.ServiceTable
	cfg       *Config
	sched     string
	nodeAddrs []netip.Addr // the node's addresses off kube-ipvs0 (nodeAddressSet)
	npIPs     []netip.Addr // addresses that get NodePort virtual servers
	vs        map[vsKey]*ipvs.VirtualServer
	sets      map[string]map[string]struct{} // by base name
	bind      map[netip.Addr]struct{}
	noNode    []lbEntry
}

// IPVS renders kube-proxy v1.37's ipvs-mode state for one family: a virtual
// server per ClusterIP, external IP, load-balancer IP and node IP x NodePort;
// the 17 ipsets; the kube-ipvs0 addresses; the helper iptables chains.
// Orders: virtual servers by address, port, protocol; their real servers by
// address, port; sets by name; set entries as strings; addresses ascending.
// kube-proxy itself walks Go maps. When two Service ports claim the same
// virtual server, the first in table order wins (kube-proxy: the last synced).
func IPVS(t *nodetable.ServiceTable, cfg Config, opts IPVSOptions) *ipvs.Ruleset {
	s := &ipvsState{
		t: t, cfg: &cfg, sched: opts.scheduler(),
		vs:   map[vsKey]*ipvs.VirtualServer{},
		sets: map[string]map[string]struct{}{},
		bind: map[netip.Addr]struct{}{},
	}
	s.resolveNodeIPs()
	for i := range t.Ports {
		s.writeServicePort(&t.Ports[i])
	}
	for a := range s.bind {
		s.add(SetIPVSIPs, a.String())
	}
	return &ipvs.Ruleset{
		Family:         t.Family,
		VirtualServers: s.virtualServers(),
		Sets:           s.ipsets(),
		Addresses:      sortedAddrs(s.bind),
		IPTables:       s.helperChains(),
	}
}

// resolveNodeIPs computes kube-proxy's nodeAddressSet (every address but
// loopback and IPv6 link-local) and the NodePort addresses: all of those
// when nodePortAddresses match everything, else the matching non-loopback ones.
func (s *ipvsState) resolveNodeIPs() {
	for _, a := range s.cfg.hostAddresses(s.t) {
		if a.IsLoopback() || (a.Is6() && a.IsLinkLocalUnicast()) || slices.Contains(s.nodeAddrs, a) {
			continue
		}
		s.nodeAddrs = append(s.nodeAddrs, a)
	}
	slices.SortFunc(s.nodeAddrs, netip.Addr.Compare)
	np := s.cfg.resolveNodePorts(s.t, NodePortAll)
	if np.matchAll {
		s.npIPs = s.nodeAddrs
		return
	}
	for _, a := range np.ips {
		if !a.IsLoopback() {
			s.npIPs = append(s.npIPs, a)
		}
	}
}

func (s *ipvsState) add(set, entry string) {
	m := s.sets[set]
	if m == nil {
		m = map[string]struct{}{}
		s.sets[set] = m
	}
	m[entry] = struct{}{}
}

func (s *ipvsState) has(set string) bool { return len(s.sets[set]) > 0 }

// Entry spellings, as `ipset save` prints them.
func ipPort(ip netip.Addr, proto string, port int32) string {
	return ip.String() + "," + proto + ":" + strconv.Itoa(int(port))
}

func ipPortNet(ip netip.Addr, proto string, port int32, net netip.Prefix) string {
	n := net.Masked()
	if n.Bits() == n.Addr().BitLen() {
		return ipPort(ip, proto, port) + "," + n.Addr().String()
	}
	return ipPort(ip, proto, port) + "," + n.String()
}

func (s *ipvsState) writeServicePort(sp *nodetable.ServicePort) {
	proto := sp.Name.Protocol.Lower()
	for _, ep := range sp.AllEndpoints {
		if ep.Local && ep.IP.IsValid() && ep.Port != 0 {
			s.add(SetLoopBack, ipPort(ep.IP, proto, ep.Port)+","+ep.IP.String())
		}
	}
	s.add(SetClusterIP, ipPort(sp.ClusterIP, proto, sp.Port))
	s.addVirtualServer(sp, sp.ClusterIP, sp.Port, sp.InternalPolicyLocal)
	s.bind[sp.ClusterIP] = struct{}{}
	for _, ip := range sp.ExternalIPs {
		if sp.ExternalPolicyLocal {
			s.add(SetExternalIPLocal, ipPort(ip, proto, sp.Port))
		} else {
			s.add(SetExternalIP, ipPort(ip, proto, sp.Port))
		}
		s.addBoundVirtualServer(sp, ip)
	}
	for _, ip := range sp.LoadBalancerVIPs {
		s.writeLoadBalancerIP(sp, ip, proto)
		s.addBoundVirtualServer(sp, ip)
	}
	if sp.NodePort != 0 {
		if len(s.npIPs) == 0 {
			return // kube-proxy skips the rest of the port, health check included
		}
		s.writeNodePort(sp, proto)
	}
	if sp.HealthCheckNodePort != 0 {
		s.add(SetHealthCheckNodePort, strconv.Itoa(int(sp.HealthCheckNodePort)))
	}
}

// addBoundVirtualServer adds an external or LB virtual server and binds its
// address to kube-ipvs0 unless the node already has it.
func (s *ipvsState) addBoundVirtualServer(sp *nodetable.ServicePort, ip netip.Addr) {
	s.addVirtualServer(sp, ip, sp.Port, sp.ExternalPolicyLocal)
	if !slices.Contains(s.nodeAddrs, ip) {
		s.bind[ip] = struct{}{}
	}
}

func (s *ipvsState) writeLoadBalancerIP(sp *nodetable.ServicePort, ip netip.Addr, proto string) {
	entry := ipPort(ip, proto, sp.Port)
	s.add(SetLoadBalancer, entry)
	if sp.ExternalPolicyLocal {
		s.add(SetLoadBalancerLocal, entry)
	}
	if len(sp.LoadBalancerSourceRanges) == 0 {
		return
	}
	s.add(SetLoadBalancerFW, entry)
	allowFromNode := false
	for _, cidr := range sp.LoadBalancerSourceRanges {
		s.add(SetLoadBalancerSourceCIDR, ipPortNet(ip, proto, sp.Port, cidr))
		if cidr.Contains(primaryNodeIP(s.t)) {
			allowFromNode = true
		}
	}
	if allowFromNode {
		s.add(SetLoadBalancerSourceIP, entry+","+ip.String())
	} else {
		s.noNode = append(s.noNode, lbEntry{ip: ip, proto: proto, port: sp.Port})
	}
}

var nodePortSets = map[string][2]string{
	"tcp":  {SetNodePortTCP, SetNodePortLocalTCP},
	"udp":  {SetNodePortUDP, SetNodePortLocalUDP},
	"sctp": {SetNodePortSCTP, SetNodePortLocalSCTP},
}

func (s *ipvsState) writeNodePort(sp *nodetable.ServicePort, proto string) {
	var entries []string
	if proto == "sctp" {
		for _, ip := range s.npIPs {
			entries = append(entries, ipPort(ip, proto, sp.NodePort))
		}
	} else {
		entries = []string{strconv.Itoa(int(sp.NodePort))}
	}
	sets := nodePortSets[proto]
	for _, e := range entries {
		s.add(sets[0], e)
		if sp.ExternalPolicyLocal {
			s.add(sets[1], e)
		}
	}
	for _, ip := range s.npIPs {
		s.addVirtualServer(sp, ip, sp.NodePort, sp.ExternalPolicyLocal)
	}
}

// addVirtualServer adds one virtual server with the real servers kube-proxy's
// syncEndpoint picks: the local endpoints when onlyLocal and there are any,
// else the cluster endpoints; every one with weight 1.
func (s *ipvsState) addVirtualServer(sp *nodetable.ServicePort, addr netip.Addr, port int32, onlyLocal bool) {
	key := vsKey{ipvs.Protocol(sp.Name.Protocol.Lower()), netip.AddrPortFrom(addr, uint16(port))}
	if _, dup := s.vs[key]; dup {
		return
	}
	vs := &ipvs.VirtualServer{Protocol: key.proto, Address: addr, Port: uint16(port), Scheduler: s.sched}
	if sp.SessionAffinity() {
		vs.Flags |= ipvs.FlagPersistent
		vs.Timeout = uint32(sp.AffinityTimeoutSeconds)
	}
	if s.sched == "mh" {
		vs.Flags |= ipvs.FlagSched2 // kube-proxy's FlagSourceHash: mh-port
	}
	eps := sp.ClusterEndpoints
	if onlyLocal && len(sp.LocalEndpoints) > 0 {
		eps = sp.LocalEndpoints
	}
	for _, ep := range eps {
		vs.RealServers = append(vs.RealServers, ipvs.RealServer{Address: ep.IP, Port: uint16(ep.Port), Method: ipvs.Masquerade, Weight: 1})
	}
	slices.SortFunc(vs.RealServers, func(a, b ipvs.RealServer) int {
		return cmp.Or(a.Address.Compare(b.Address), cmp.Compare(a.Port, b.Port))
	})
	s.vs[key] = vs
}

func (s *ipvsState) virtualServers() []*ipvs.VirtualServer {
	out := make([]*ipvs.VirtualServer, 0, len(s.vs))
	for _, vs := range s.vs {
		out = append(out, vs)
	}
	slices.SortFunc(out, func(a, b *ipvs.VirtualServer) int {
		return cmp.Or(a.Address.Compare(b.Address), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// ipsets returns all of kube-proxy's sets, empty ones included, by name.
func (s *ipvsState) ipsets() []*ipvs.Set {
	family := "inet"
	if s.t.Family == nodetable.IPv6 {
		family = "inet6"
	}
	out := make([]*ipvs.Set, 0, len(ipvsSetInfo))
	for _, info := range ipvsSetInfo {
		set := &ipvs.Set{Name: IPVSSetName(info.name, s.t.Family), Type: info.typ, Comment: info.comment}
		if info.typ.IsHash() {
			set.Family, set.HashSize, set.MaxElem = family, 1024, 65536
		} else {
			set.PortRange = "0-65535"
		}
		for e := range s.sets[info.name] {
			set.Entries = append(set.Entries, e)
		}
		slices.Sort(set.Entries)
		out = append(out, set)
	}
	slices.SortFunc(out, func(a, b *ipvs.Set) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedAddrs(m map[netip.Addr]struct{}) []netip.Addr {
	out := make([]netip.Addr, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
