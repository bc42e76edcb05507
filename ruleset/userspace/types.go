// Package userspace models what kube-proxy's userspace mode (last shipped
// in Kubernetes v1.25, pkg/proxy/userspace) programs for one IP family as
// plain data: the port map, which gives every Service port a local proxy
// port that a user-space proxy listens on, and the "portal" iptables rules
// (an iptables.Ruleset) that send Service traffic to those ports.
//
// Its one native text form (Encode, Parse) has two sections:
//
//	## ports IPv4 listen 0.0.0.0
//	# service-port protocol portal proxy-port affinity-seconds endpoints
//	default/web:http tcp 10.96.0.10:80 24817 0 10.244.1.5:8080,10.244.2.3:8080
//	## iptables
//	*filter ... COMMIT (iptables-save text)
package userspace

import (
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Fixed chain names, as kube-proxy v1.25's userspace mode names them
// (iptablesContainerPortalChain and friends). All are under iptables'
// 28-character limit.
const (
	// ChainPortalsContainer (nat, from PREROUTING) catches traffic to
	// ClusterIPs, external IPs and load-balancer IPs arriving from pods and
	// other hosts.
	ChainPortalsContainer = "KUBE-PORTALS-CONTAINER"
	// ChainPortalsHost (nat, from OUTPUT) catches the same traffic sent by
	// processes on the node.
	ChainPortalsHost = "KUBE-PORTALS-HOST"
	// ChainNodePortContainer (nat, from PREROUTING, for local destinations)
	// catches NodePort traffic arriving from elsewhere.
	ChainNodePortContainer = "KUBE-NODEPORT-CONTAINER"
	// ChainNodePortHost (nat, from OUTPUT, for local destinations) catches
	// NodePort traffic sent by the node itself.
	ChainNodePortHost = "KUBE-NODEPORT-HOST"
	// ChainNodePortNonLocal (filter, from INPUT) accepts new connections to
	// the proxy ports of NodePort Services despite a default-deny INPUT.
	ChainNodePortNonLocal = "KUBE-NODEPORT-NON-LOCAL"
)

// Port is one entry of the port map: one Service port and the local port
// its user-space proxy listens on.
type Port struct {
	// Name identifies the Service port, protocol included.
	Name nodetable.ServicePortName `json:"name"`
	// Portal is the ClusterIP and Service port (v1.25's info.portal).
	Portal netip.AddrPort `json:"portal"`
	// ProxyPort is the local port the proxy listens on, on ListenIP. Zero
	// means none could be allocated (the range is full); such a port has no
	// portal rules.
	ProxyPort uint16 `json:"proxyPort"`
	// AffinityTimeoutSeconds is non-zero exactly when sessionAffinity is
	// ClientIP (the round-robin balancer's sticky timeout).
	AffinityTimeoutSeconds int32 `json:"affinityTimeoutSeconds,omitempty"`
	// Endpoints are the ready backends, sorted, that the proxy balances over.
	Endpoints []netip.AddrPort `json:"endpoints,omitempty"`
}

// Equal reports whether two ports are identical.
func (p *Port) Equal(o *Port) bool {
	return p.Name == o.Name && p.Portal == o.Portal && p.ProxyPort == o.ProxyPort &&
		p.AffinityTimeoutSeconds == o.AffinityTimeoutSeconds && slices.Equal(p.Endpoints, o.Endpoints)
}

// Ruleset is everything kube-proxy's userspace mode programs for one family.
type Ruleset struct {
	Family nodetable.Family `json:"family"`
	// ListenIP is the address the proxy sockets bind (--bind-address); the
	// unspecified address means every interface.
	ListenIP netip.Addr `json:"listenIP"`
	// Ports are sorted by (name, protocol), as the ServiceTable is.
	Ports []Port `json:"ports"`
	// IPTables holds the portal chains and the jump rules into them.
	IPTables *ipt.Ruleset `json:"iptables"`
}

// Port returns the entry for name, or nil.
func (rs *Ruleset) Port(name nodetable.ServicePortName) *Port {
	for i := range rs.Ports {
		if rs.Ports[i].Name == name {
			return &rs.Ports[i]
		}
	}
	return nil
}

// Equal reports whether two rulesets hold the same ports and rules in the
// same order.
func (rs *Ruleset) Equal(o *Ruleset) bool {
	if rs.Family != o.Family || rs.ListenIP != o.ListenIP {
		return false
	}
	if !slices.EqualFunc(rs.Ports, o.Ports, func(a, b Port) bool { return a.Equal(&b) }) {
		return false
	}
	if rs.IPTables == nil || o.IPTables == nil {
		return rs.IPTables == nil && o.IPTables == nil
	}
	return rs.IPTables.Equal(o.IPTables)
}
