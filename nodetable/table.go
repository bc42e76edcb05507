package nodetable

import "net/netip"

// Family is an IP family, spelled as in the Kubernetes API.
type Family string

const (
	IPv4 Family = "IPv4"
	IPv6 Family = "IPv6"
)

// FamilyOf returns the family of addr. IPv4-mapped IPv6 addresses count as IPv4.
func FamilyOf(addr netip.Addr) Family {
	if addr.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

// Protocol is a Service port protocol, spelled as in the Kubernetes API.
type Protocol string

const (
	TCP  Protocol = "TCP"
	UDP  Protocol = "UDP"
	SCTP Protocol = "SCTP"
)

// Lower returns the protocol as iptables and nft spell it ("tcp").
func (p Protocol) Lower() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return string(p)
}

// ServicePortName identifies one port of one Service, as kube-proxy's
// proxy.ServicePortName does.
type ServicePortName struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Port      string   `json:"port,omitempty"`
	Protocol  Protocol `json:"protocol"`
}

// String is "namespace/name:port", or "namespace/name" for an unnamed port:
// the text kube-proxy hashes into chain names and writes into comments.
func (n ServicePortName) String() string {
	s := n.Namespace + "/" + n.Name
	if n.Port != "" {
		s += ":" + n.Port
	}
	return s
}

// Endpoint is one backend address of one Service port, after kube-proxy's
// deduplication. Its identity is String(), "ip:port".
type Endpoint struct {
	IP          netip.Addr `json:"ip"`
	Port        int32      `json:"port"`
	NodeName    string     `json:"nodeName,omitempty"`
	Local       bool       `json:"local,omitempty"`
	Ready       bool       `json:"ready,omitempty"`
	Serving     bool       `json:"serving,omitempty"`
	Terminating bool       `json:"terminating,omitempty"`
	ZoneHints   []string   `json:"zoneHints,omitempty"`
	NodeHints   []string   `json:"nodeHints,omitempty"`
}

// String is "ip:port", or "[ip]:port" for IPv6: kube-proxy's endpoint key,
// used for sorting, hashing and DNAT targets.
func (e Endpoint) String() string {
	return netip.AddrPortFrom(e.IP, uint16(e.Port)).String()
}

// AppendKey appends String()'s text to b.
func (e Endpoint) AppendKey(b []byte) []byte {
	return netip.AddrPortFrom(e.IP, uint16(e.Port)).AppendTo(b)
}

// ServicePort is one port of one proxied Service as seen from one node, in
// one IP family, with its endpoints already categorized the way kube-proxy's
// CategorizeEndpoints does. Renderers read it and never second-guess it.
type ServicePort struct {
	Name                     ServicePortName `json:"name"`
	ClusterIP                netip.Addr      `json:"clusterIP"`
	Port                     int32           `json:"port"`
	NodePort                 int32           `json:"nodePort,omitempty"`
	ExternalIPs              []netip.Addr    `json:"externalIPs,omitempty"`
	LoadBalancerVIPs         []netip.Addr    `json:"loadBalancerVIPs,omitempty"`
	LoadBalancerSourceRanges []netip.Prefix  `json:"loadBalancerSourceRanges,omitempty"`
	HealthCheckNodePort      int32           `json:"healthCheckNodePort,omitempty"`
	// AffinityTimeoutSeconds is non-zero exactly when sessionAffinity is ClientIP.
	AffinityTimeoutSeconds int32 `json:"affinityTimeoutSeconds,omitempty"`
	InternalPolicyLocal    bool  `json:"internalPolicyLocal,omitempty"`
	ExternalPolicyLocal    bool  `json:"externalPolicyLocal,omitempty"`

	// AllEndpoints are every endpoint of this port in this family, sorted by String().
	AllEndpoints []Endpoint `json:"allEndpoints,omitempty"`
	// ClusterEndpoints serve "Cluster" traffic policy (topology and the
	// serving-terminating fallback applied), sorted by String().
	ClusterEndpoints []Endpoint `json:"clusterEndpoints,omitempty"`
	// LocalEndpoints serve "Local" traffic policy, sorted by String().
	LocalEndpoints []Endpoint `json:"localEndpoints,omitempty"`
	// ReachableEndpoints is the union of the two that are in use, sorted by String().
	ReachableEndpoints []Endpoint `json:"reachableEndpoints,omitempty"`
	// HasEndpoints is kube-proxy's hasAnyEndpoints: some usable endpoint exists on any node.
	HasEndpoints bool `json:"hasEndpoints,omitempty"`
}

// SessionAffinity reports whether ClientIP session affinity is on.
func (sp *ServicePort) SessionAffinity() bool { return sp.AffinityTimeoutSeconds > 0 }

// ExternallyAccessible is true when the port has a NodePort, an external IP
// or a load-balancer VIP in this family.
func (sp *ServicePort) ExternallyAccessible() bool {
	return sp.NodePort != 0 || len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerVIPs) > 0
}

// UsesClusterEndpoints mirrors kube-proxy: Cluster policy is in use for
// internal traffic, or for the short-circuit of external traffic.
func (sp *ServicePort) UsesClusterEndpoints() bool {
	return !sp.InternalPolicyLocal || sp.ExternallyAccessible()
}

// UsesLocalEndpoints mirrors kube-proxy: some traffic policy is Local.
func (sp *ServicePort) UsesLocalEndpoints() bool {
	return sp.InternalPolicyLocal || (sp.ExternalPolicyLocal && sp.ExternallyAccessible())
}

// Node describes the node the table was built for.
type Node struct {
	Name string `json:"name"`
	// IPs are the node's primary addresses in this family (from --node-ip or
	// the Node object), first one primary.
	IPs []netip.Addr `json:"ips,omitempty"`
	// PodCIDRs are the Node's spec.podCIDRs in this family.
	PodCIDRs []netip.Prefix `json:"podCIDRs,omitempty"`
	// Zone is the node's topology.kubernetes.io/zone label.
	Zone string `json:"zone,omitempty"`
}

// ServiceTable is the node-local, single-family view of every proxied
// Service port: the input of every renderer. It is sorted by
// (ServicePortName.String(), protocol) and never modified after Build.
type ServiceTable struct {
	Family Family        `json:"family"`
	Node   Node          `json:"node"`
	Ports  []ServicePort `json:"ports"`
	// ServiceCIDRs are the cluster's Service ranges in this family, from
	// ServiceCIDR objects or configuration (nftables' cluster-ips-check).
	ServiceCIDRs []netip.Prefix `json:"serviceCIDRs,omitempty"`
}

// Tables holds the node-local ServiceTable of each family. Both are always
// non-nil; a family the cluster does not use has no ports.
type Tables struct {
	IPv4, IPv6 *ServiceTable
}

// ForFamily returns the table of family f, or nil for an unknown family.
func (t *Tables) ForFamily(f Family) *ServiceTable {
	switch f {
	case IPv4:
		return t.IPv4
	case IPv6:
		return t.IPv6
	}
	return nil
}
