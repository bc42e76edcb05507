package render

import (
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// This file declares, as data, what each mode owns in the kernel. diff
// and apply receive these values and never decide ownership themselves,
// so applying or resetting one mode never touches what another mode, or
// anyone else, wrote.

// lastRuleMarker is the comment text of kube-proxy's rules that must end
// their chain (the NodePort jumps of KUBE-SERVICES).
const lastRuleMarker = "NOTE: this must be the last rule in this chain"

// jumpMatches are the matches kube-proxy's jumps from built-in chains
// carry: a conntrack state (KUBE-PROXY-FIREWALL, KUBE-EXTERNAL-SERVICES),
// a comment, and the userspace mode's local destination type.
var jumpMatches = []string{"conntrack", "comment", "addrtype"}

// dispatchChains are the iptables mode's chains whose rules kube-proxy
// writes in Go map order, one Service after another. The rules of
// different Services there match disjoint destinations, so kube-proxy's
// order and the tool's sorted order program the same thing: only the
// multiset of their rules and their last rules carry meaning.
var dispatchChains = map[ipt.TableName][]string{
	ipt.NAT:    {ChainServices, ChainNodePorts},
	ipt.Filter: {ChainServices, ChainExternalServices, ChainNodePorts, ChainProxyFirewall},
}

// IPTablesOwnership is the iptables mode's: kube-proxy's fixed chains of
// the filter and nat tables and, in nat, the per-service and per-endpoint
// chains. kubelet's KUBE-FIREWALL is shared. KUBE-PROXY-CANARY,
// KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT and everything else are foreign.
func IPTablesOwnership() *ipt.Ownership {
	return &ipt.Ownership{
		Chains: map[ipt.TableName][]string{ipt.Filter: slices.Clone(filterChains), ipt.NAT: slices.Clone(natChains)},
		Prefixes: map[ipt.TableName][]string{
			ipt.NAT: {PrefixServiceCluster, PrefixServiceLocal, PrefixFirewall, PrefixExternal, PrefixEndpoint},
		},
		Shared:      []string{ChainKubeletFirewall},
		Unordered:   cloneChains(dispatchChains),
		LastMarker:  lastRuleMarker,
		JumpMatches: slices.Clone(jumpMatches),
	}
}

// UserspaceOwnership is the userspace mode's: its portal chains only,
// compared in order.
func UserspaceOwnership() *ipt.Ownership {
	return &ipt.Ownership{
		Chains: map[ipt.TableName][]string{
			ipt.NAT: {
				userspace.ChainPortalsContainer, userspace.ChainPortalsHost,
				userspace.ChainNodePortContainer, userspace.ChainNodePortHost,
			},
			ipt.Filter: {userspace.ChainNodePortNonLocal},
		},
		JumpMatches: slices.Clone(jumpMatches),
	}
}

// IPVSOwnership is the ipvs mode's: its fixed helper chains (some share
// their names with the iptables mode's, as in kube-proxy, so switching
// between the two modes rewrites those), every set of kube-proxy's
// ipsetInfo table in both families, and the virtual servers the NodePort
// sets and kube-ipvs0 identify, minus those in exclude
// (--ipvs-exclude-cidrs).
func IPVSOwnership(exclude []netip.Prefix) *ipvs.Ownership {
	o := &ipvs.Ownership{
		Chains: &ipt.Ownership{
			Chains:      map[ipt.TableName][]string{ipt.Filter: slices.Clone(ipvsFilterChains), ipt.NAT: slices.Clone(ipvsNATChains)},
			JumpMatches: slices.Clone(jumpMatches),
		},
		Sets:         map[nodetable.Family][]string{},
		PortSets:     map[nodetable.Family]map[ipvs.Protocol]string{},
		AddrPortSets: map[nodetable.Family]string{},
		ExcludeCIDRs: slices.Clone(exclude),
	}
	for _, f := range []nodetable.Family{nodetable.IPv4, nodetable.IPv6} {
		for _, s := range ipvsSetInfo {
			o.Sets[f] = append(o.Sets[f], IPVSSetName(s.name, f))
		}
		slices.Sort(o.Sets[f])
		o.PortSets[f] = map[ipvs.Protocol]string{
			ipvs.TCP: IPVSSetName(SetNodePortTCP, f),
			ipvs.UDP: IPVSSetName(SetNodePortUDP, f),
		}
		o.AddrPortSets[f] = IPVSSetName(SetNodePortSCTP, f)
	}
	return o
}

// NFTablesOwnership is the nftables mode's: the kube-proxy table of the ip
// and ip6 families, and everything in it.
func NFTablesOwnership() *nft.Ownership {
	return &nft.Ownership{Table: NFTablesTable, Families: []nft.Family{nft.IPv4, nft.IPv6}}
}

func cloneChains(m map[ipt.TableName][]string) map[ipt.TableName][]string {
	out := make(map[ipt.TableName][]string, len(m))
	for t, chains := range m {
		out[t] = slices.Clone(chains)
	}
	return out
}
