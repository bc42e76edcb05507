// Package render turns a node-local nodetable.ServiceTable and a Config into
// the desired ruleset of one proxy mode. Every function here is pure: no
// clients, no exec, no clock, no randomness. The same inputs always give the
// same ruleset, byte for byte.
package render

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// DetectLocalMode says how "traffic from a local pod" is recognised, as
// kube-proxy's --detect-local-mode.
type DetectLocalMode string

const (
	LocalModeClusterCIDR         DetectLocalMode = "ClusterCIDR"
	LocalModeNodeCIDR            DetectLocalMode = "NodeCIDR"
	LocalModeBridgeInterface     DetectLocalMode = "BridgeInterface"
	LocalModeInterfaceNamePrefix DetectLocalMode = "InterfaceNamePrefix"
)

// Keywords accepted in NodePortAddresses besides CIDRs (kube-proxy v1.37).
const (
	NodePortPrimary   = "primary"
	NodePortLocalhost = "localhost"
	NodePortAll       = "all"
)

// Config holds the node-level proxy settings that shape the rules, named
// after kube-proxy's KubeProxyConfiguration fields.
type Config struct {
	// ClusterCIDRs are the pod ranges (--cluster-cidr), one per family at most.
	ClusterCIDRs []netip.Prefix `json:"clusterCIDRs,omitempty"`
	// DetectLocalMode defaults to ClusterCIDR.
	DetectLocalMode     DetectLocalMode `json:"detectLocalMode,omitempty"`
	BridgeInterface     string          `json:"bridgeInterface,omitempty"`
	InterfaceNamePrefix string          `json:"interfaceNamePrefix,omitempty"`
	// MasqueradeAll masquerades all traffic sent to a ClusterIP.
	MasqueradeAll bool `json:"masqueradeAll,omitempty"`
	// MasqueradeBit is the fwmark bit that marks packets for SNAT (default 14).
	MasqueradeBit int `json:"masqueradeBit"`
	// NodePortAddresses are CIDRs or the keywords primary, localhost and all.
	// Empty means all addresses in iptables mode and "primary" in nftables mode.
	NodePortAddresses []string `json:"nodePortAddresses,omitempty"`
	// LocalhostNodePorts lets NodePorts answer on 127.0.0.1 (iptables, IPv4).
	LocalhostNodePorts bool `json:"localhostNodePorts"`
	// HostAddresses are the node's local interface addresses, against which
	// NodePortAddresses CIDRs are expanded. Empty means the node IPs plus loopback.
	HostAddresses []netip.Addr `json:"hostAddresses,omitempty"`
	// ConntrackTCPBeLiberal mirrors the nf_conntrack_tcp_be_liberal sysctl:
	// when set, no rule drops conntrack-INVALID packets.
	ConntrackTCPBeLiberal bool `json:"conntrackTCPBeLiberal,omitempty"`
	// NFAcct adds kube-proxy's nfacct counting matches, and with them the
	// localhost NodePort rules, which kube-proxy writes only with a
	// counter to count them: kube-proxy does on a kernel with nfacct
	// (nfnetlink_acct), so it is the default. Loading the rules needs the
	// counters to exist (apply/nfacct).
	NFAcct bool `json:"nfacct,omitempty"`
	// NFTablesLayout is how nftables mode picks an endpoint: "" (or
	// NFTablesLayoutKubeProxy) as kube-proxy does, NFTablesLayoutCompact
	// without anonymous maps (see writeDNAT and writeCascade).
	NFTablesLayout string `json:"nftablesLayout,omitempty"`
}

// The nftables layouts.
const (
	// NFTablesLayoutKubeProxy is kube-proxy's: a numgen lookup in an
	// anonymous map per service chain.
	NFTablesLayoutKubeProxy = "kube-proxy"
	// NFTablesLayoutCompact picks the endpoint by numgen among the
	// chain's keys in maps shared by the table (nftables_compact.go),
	// and with a numgen rule per endpoint under session affinity: the
	// same chains and choice, without an anonymous map per service.
	NFTablesLayoutCompact = "compact"
)

// DefaultConfig returns kube-proxy's defaults.
func DefaultConfig() Config {
	return Config{
		DetectLocalMode:    LocalModeClusterCIDR,
		MasqueradeBit:      14,
		LocalhostNodePorts: true,
		NFAcct:             true,
	}
}

// Validate checks the settings that the renderers rely on.
func (c *Config) Validate() error {
	if c.MasqueradeBit < 0 || c.MasqueradeBit > 31 {
		return &SettingError{Setting: "masqueradeBit", Value: fmt.Sprint(c.MasqueradeBit), Problem: "must be between 0 and 31"}
	}
	switch c.DetectLocalMode {
	case "", LocalModeClusterCIDR, LocalModeNodeCIDR:
	case LocalModeBridgeInterface:
		if c.BridgeInterface == "" {
			return &SettingError{Setting: "detectLocalMode", Value: string(c.DetectLocalMode), Needs: "bridgeInterface"}
		}
	case LocalModeInterfaceNamePrefix:
		if c.InterfaceNamePrefix == "" {
			return &SettingError{Setting: "detectLocalMode", Value: string(c.DetectLocalMode), Needs: "interfaceNamePrefix"}
		}
	default:
		return &SettingError{Setting: "detectLocalMode", Value: fmt.Sprintf("%q", c.DetectLocalMode),
			Problem: "must be ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix"}
	}
	if err := c.validateInterfaces(); err != nil {
		return err
	}
	switch c.NFTablesLayout {
	case "", NFTablesLayoutKubeProxy, NFTablesLayoutCompact:
	default:
		return &SettingError{Setting: "nftablesLayout", Value: fmt.Sprintf("%q", c.NFTablesLayout), Problem: "must be kube-proxy or compact"}
	}
	for _, a := range c.NodePortAddresses {
		switch a {
		case NodePortPrimary, NodePortLocalhost, NodePortAll:
			continue
		}
		if _, err := netip.ParsePrefix(a); err != nil {
			return &SettingError{Setting: "nodePortAddresses", Value: fmt.Sprintf("%q", a), Problem: "neither a CIDR nor primary, localhost or all"}
		}
	}
	return nil
}

// masqueradeMark is the mark value, spelled as iptables-save prints it.
func (c *Config) masqueradeMark() string {
	return fmt.Sprintf("%#x", uint32(1)<<c.MasqueradeBit)
}

// localDetector recognises pod-originated traffic, in one family.
type localDetector struct {
	cidr      netip.Prefix // ClusterCIDR / NodeCIDR modes
	iface     string       // BridgeInterface / InterfaceNamePrefix modes ("veth+")
	available bool
}

func (c *Config) localDetector(t *nodetable.ServiceTable) localDetector {
	switch c.DetectLocalMode {
	case LocalModeBridgeInterface:
		return localDetector{iface: c.BridgeInterface, available: true}
	case LocalModeInterfaceNamePrefix:
		return localDetector{iface: c.InterfaceNamePrefix + "+", available: true}
	case LocalModeNodeCIDR:
		if len(t.Node.PodCIDRs) > 0 {
			return localDetector{cidr: t.Node.PodCIDRs[0], available: true}
		}
		return localDetector{}
	}
	for _, p := range c.ClusterCIDRs {
		if familyOfPrefix(p) == t.Family {
			return localDetector{cidr: p.Masked(), available: true}
		}
	}
	return localDetector{}
}

func familyOfPrefix(p netip.Prefix) nodetable.Family { return nodetable.FamilyOf(p.Addr()) }

// nodePorts is NodePortAddresses resolved for one family, as kube-proxy's
// NodePortAddresses type resolves it.
type nodePorts struct {
	matchAll             bool
	containsIPv4Loopback bool
	cidrs                []netip.Prefix
	ips                  []netip.Addr // host addresses inside cidrs, sorted
}

// resolveNodePorts expands keywords, keeps the family's CIDRs and matches
// them against the host's addresses. defaultKeyword applies when the list is
// empty ("all" for iptables, "primary" for nftables).
func (c *Config) resolveNodePorts(t *nodetable.ServiceTable, defaultKeyword string) nodePorts {
	raw := c.NodePortAddresses
	if len(raw) == 0 {
		raw = []string{defaultKeyword}
	}
	var np nodePorts
	for _, s := range raw {
		for _, p := range expandNodePortKeyword(s, t.Node.IPs) {
			if familyOfPrefix(p) == t.Family {
				np.cidrs = append(np.cidrs, p.Masked())
			}
		}
	}
	if len(np.cidrs) == 0 {
		np.cidrs = []netip.Prefix{zeroPrefix(t.Family)}
	}
	for _, p := range np.cidrs {
		if p.Addr().Is4() && p.Contains(netip.AddrFrom4([4]byte{127, 0, 0, 1})) {
			np.containsIPv4Loopback = true
		}
		if p.Bits() == 0 {
			np.matchAll = true
			np.cidrs = []netip.Prefix{p}
			break
		}
	}
	for _, a := range c.hostAddresses(t) {
		for _, p := range np.cidrs {
			if p.Contains(a) && !slices.Contains(np.ips, a) {
				np.ips = append(np.ips, a)
			}
		}
	}
	slices.SortFunc(np.ips, func(a, b netip.Addr) int { return a.Compare(b) })
	return np
}

// NodePortIPs resolves NodePortAddresses for table t's family as
// kube-proxy does for a mode whose default is defaultKeyword (NodePortAll
// in iptables and ipvs mode, NodePortPrimary in nftables mode): all is
// true when they match every address of the family; otherwise ips are
// the host addresses (HostAddresses, or the node IPs and loopback) they
// match, sorted. kube-proxy listens there for the Service health checks.
func (c *Config) NodePortIPs(t *nodetable.ServiceTable, defaultKeyword string) (all bool, ips []netip.Addr) {
	np := c.resolveNodePorts(t, defaultKeyword)
	if np.matchAll {
		return true, nil
	}
	return false, np.ips
}

func expandNodePortKeyword(s string, nodeIPs []netip.Addr) []netip.Prefix {
	switch s {
	case NodePortPrimary:
		var out []netip.Prefix
		for _, ip := range nodeIPs {
			if !ip.IsLoopback() {
				out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
				break
			}
		}
		return out
	case NodePortLocalhost:
		return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	case NodePortAll:
		return []netip.Prefix{zeroPrefix(nodetable.IPv4), zeroPrefix(nodetable.IPv6)}
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return nil
	}
	return []netip.Prefix{p}
}

func zeroPrefix(f nodetable.Family) netip.Prefix {
	if f == nodetable.IPv6 {
		return netip.PrefixFrom(netip.IPv6Unspecified(), 0)
	}
	return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
}

// hostAddresses returns the configured host addresses of the table's family,
// or the node IPs plus loopback.
func (c *Config) hostAddresses(t *nodetable.ServiceTable) []netip.Addr {
	var out []netip.Addr
	for _, a := range c.HostAddresses {
		if nodetable.FamilyOf(a) == t.Family {
			out = append(out, a)
		}
	}
	if len(c.HostAddresses) > 0 {
		return out
	}
	out = append(out, t.Node.IPs...)
	if t.Family == nodetable.IPv6 {
		return append(out, netip.IPv6Loopback())
	}
	return append(out, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
}

// primaryNodeIP is the proxier's node IP for the table's family: the first
// node IP, or loopback when none is known, as kube-proxy's detectNodeIPs
// falls back. It decides whether LoadBalancerSourceRanges admit the node.
func primaryNodeIP(t *nodetable.ServiceTable) netip.Addr {
	if len(t.Node.IPs) > 0 {
		return t.Node.IPs[0]
	}
	if t.Family == nodetable.IPv6 {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}
