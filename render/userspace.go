package render

import (
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// UserspaceOptions are the settings of kube-proxy v1.25's userspace mode
// that no other mode has.
type UserspaceOptions struct {
	// ListenIP is --bind-address, the address the proxy sockets bind. The
	// zero value, or an address of the other family, means the table's
	// unspecified address (0.0.0.0 or ::), v1.25's default. v1.25 refused
	// loopback; so does Validate.
	ListenIP netip.Addr `json:"listenIP,omitempty"`
	// PortRange is --proxy-port-range; the zero value means
	// DefaultProxyPortRange (20000-29999). See allocatePorts.
	PortRange ProxyPortRange `json:"portRange,omitzero"`
}

// Validate checks the options as v1.25's NewProxier did.
func (o *UserspaceOptions) Validate() error {
	if o.ListenIP.IsLoopback() {
		return &SettingError{Setting: "listenIP", Value: o.ListenIP.String(), Problem: "cannot proxy on localhost"}
	}
	if r := o.PortRange; r != (ProxyPortRange{}) && (r.First == 0 || r.Last < r.First) {
		return &SettingError{Setting: "portRange", Value: r.String(), Problem: "need 1 <= first <= last"}
	}
	return nil
}

// Fixed comments of the jump rules, as v1.25's iptablesInit wrote them.
const (
	commentPortalJump   = "handle ClusterIPs; NOTE: this must be before the NodePort rules"
	commentNodePortJump = "handle service NodePorts; NOTE: this must be the last rule in the chain"
	commentNonLocalJump = "Ensure that non-local NodePort traffic can flow"
)

// userspaceJumps are the rules from built-in chains, in kernel order:
// iptablesInit prepends the portal jumps and appends the NodePort jumps, so
// in PREROUTING and OUTPUT the portal chain always comes first.
var userspaceJumps = []struct {
	table    ipt.TableName
	from, to string
	dstLocal bool
	comment  string
}{
	{ipt.Filter, "INPUT", userspace.ChainNodePortNonLocal, false, commentNonLocalJump},
	{ipt.NAT, "PREROUTING", userspace.ChainPortalsContainer, false, commentPortalJump},
	{ipt.NAT, "PREROUTING", userspace.ChainNodePortContainer, true, commentNodePortJump},
	{ipt.NAT, "OUTPUT", userspace.ChainPortalsHost, false, commentPortalJump},
	{ipt.NAT, "OUTPUT", userspace.ChainNodePortHost, true, commentNodePortJump},
}

// userspaceOwnedChains are the mode's chains per table, sorted by name as
// iptables-save lists them.
var userspaceOwnedChains = map[ipt.TableName][]string{
	ipt.Filter: {userspace.ChainNodePortNonLocal},
	ipt.NAT: {userspace.ChainNodePortContainer, userspace.ChainNodePortHost,
		userspace.ChainPortalsContainer, userspace.ChainPortalsHost},
}

// userspaceState accumulates one render.
type userspaceState struct {
	listen   netip.Addr // where the proxy sockets are bound
	host     netip.Addr // DNAT target for host traffic when listen is unspecified
	redirect bool       // listen is unspecified: containers are REDIRECTed
	b        ipt.Builder
	chains   map[string]*ipt.Chain
}

// Userspace renders kube-proxy v1.25's userspace mode for one family: the
// port map (every Service port with a deterministic proxy port, see
// allocatePorts) and the portal rules that send ClusterIP, external
// IP, load-balancer IP and NodePort traffic to the proxy ports. cfg is
// taken for symmetry with the other modes: v1.25's userspace mode honoured
// none of its settings (no masquerading, nodePortAddresses or local
// detection). Service ports that get no proxy port because the range is
// full are listed with proxy port 0 and get no rules; the caller warns
// about each, as v1.25 logged an error for each port it could not
// allocate (internal/cli). SCTP Service ports are left out (see
// userspaceProtocol).
func Userspace(t *nodetable.ServiceTable, cfg Config, opts UserspaceOptions) *userspace.Ruleset {
	_ = cfg
	s := newUserspaceState(t, opts)
	ports := allocateProxyPorts(t, opts.PortRange)
	rs := &userspace.Ruleset{Family: t.Family, ListenIP: s.listen, Ports: make([]userspace.Port, 0, len(t.Ports))}
	for i := range t.Ports {
		sp := &t.Ports[i]
		if !userspaceProtocol(sp.Name.Protocol) {
			continue
		}
		p := userspace.Port{
			Name:                   sp.Name,
			Portal:                 netip.AddrPortFrom(sp.ClusterIP, uint16(sp.Port)),
			ProxyPort:              ports[sp.Name],
			AffinityTimeoutSeconds: sp.AffinityTimeoutSeconds,
		}
		for _, ep := range sp.AllEndpoints {
			if ep.Ready {
				p.Endpoints = append(p.Endpoints, netip.AddrPortFrom(ep.IP, uint16(ep.Port)))
			}
		}
		rs.Ports = append(rs.Ports, p)
		if p.ProxyPort != 0 {
			s.writePortals(sp, p.ProxyPort)
		}
	}
	rs.IPTables = s.ruleset(t.Family)
	return rs
}

// userspaceProtocol reports whether v1.25's userspace proxier handled the
// protocol: it refused SCTP Service ports ("SCTP is not supported for user
// space proxy"), so they got no proxy port and no portal rules.
func userspaceProtocol(p nodetable.Protocol) bool {
	return p == nodetable.TCP || p == nodetable.UDP
}

// allocateProxyPorts allocates a port to every TCP and UDP Service port of the table,
// avoiding the NodePorts and health-check NodePorts in use.
func allocateProxyPorts(t *nodetable.ServiceTable, r ProxyPortRange) map[nodetable.ServicePortName]uint16 {
	names := make([]nodetable.ServicePortName, 0, len(t.Ports))
	var reserved []int32
	for i := range t.Ports {
		sp := &t.Ports[i]
		if userspaceProtocol(sp.Name.Protocol) {
			names = append(names, sp.Name)
		}
		if sp.NodePort != 0 {
			reserved = append(reserved, sp.NodePort)
		}
		if sp.HealthCheckNodePort != 0 {
			reserved = append(reserved, sp.HealthCheckNodePort)
		}
	}
	// The unallocated are absent, so port 0: Userspace lists them so.
	ports, _ := allocatePorts(names, r, reserved)
	return ports
}

func newUserspaceState(t *nodetable.ServiceTable, opts UserspaceOptions) *userspaceState {
	s := &userspaceState{listen: opts.ListenIP, chains: map[string]*ipt.Chain{}}
	if !s.listen.IsValid() || nodetable.FamilyOf(s.listen) != t.Family {
		s.listen = zeroPrefix(t.Family).Addr()
	}
	s.redirect = s.listen.IsUnspecified()
	s.host = s.listen
	if s.redirect {
		// v1.25 chose the host interface with the default route; the
		// node's primary IP is the same address on a normal node.
		s.host = primaryNodeIP(t)
	}
	for _, names := range userspaceOwnedChains {
		for _, c := range names {
			s.chains[c] = &ipt.Chain{Name: c, Policy: "-"}
		}
	}
	return s
}

func (s *userspaceState) add(chain string, r ipt.Rule) {
	c := s.chains[chain]
	c.Rules = append(c.Rules, r)
}

// ruleset assembles filter and nat: built-in chains with the jump rules,
// then the mode's chains by name.
func (s *userspaceState) ruleset(f nodetable.Family) *ipt.Ruleset {
	rs := &ipt.Ruleset{Family: f}
	for _, table := range []ipt.TableName{ipt.Filter, ipt.NAT} {
		t := &ipt.Table{Name: table}
		for _, from := range builtinOrder(table) {
			c := &ipt.Chain{Name: from, Policy: "-"}
			for _, j := range userspaceJumps {
				if j.table == table && j.from == from {
					c.Rules = append(c.Rules, s.jumpRule(j.to, j.dstLocal, j.comment))
				}
			}
			if len(c.Rules) > 0 {
				t.Chains = append(t.Chains, c)
			}
		}
		for _, name := range userspaceOwnedChains[table] {
			t.Chains = append(t.Chains, s.chains[name])
		}
		rs.Tables = append(rs.Tables, t)
	}
	return rs
}

func (s *userspaceState) jumpRule(to string, dstLocal bool, comment string) ipt.Rule {
	b := s.b.Reset()
	if dstLocal {
		b.Match("addrtype", "--dst-type LOCAL")
	}
	return b.Comment(comment).Jump(to).Rule()
}
