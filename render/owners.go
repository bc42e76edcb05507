package render

import (
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// OwnsIPVSChain reports whether a user-defined iptables chain is one the
// ipvs mode writes. The mode has only fixed chains; some share their names
// with the iptables mode (KUBE-SERVICES, KUBE-POSTROUTING, ...), as they do
// in kube-proxy, so switching between the two modes rewrites those chains.
func OwnsIPVSChain(table ipt.TableName, chain string) bool {
	switch table {
	case ipt.Filter:
		return slices.Contains(ipvsFilterChains, chain)
	case ipt.NAT:
		return slices.Contains(ipvsNATChains, chain)
	}
	return false
}

// userspaceChains are the userspace mode's portal chains, per table.
var userspaceChains = map[ipt.TableName][]string{
	ipt.NAT: {
		userspace.ChainPortalsContainer, userspace.ChainPortalsHost,
		userspace.ChainNodePortContainer, userspace.ChainNodePortHost,
	},
	ipt.Filter: {userspace.ChainNodePortNonLocal},
}

// OwnsUserspaceChain reports whether a user-defined iptables chain is one
// of the userspace mode's portal chains.
func OwnsUserspaceChain(table ipt.TableName, chain string) bool {
	return slices.Contains(userspaceChains[table], chain)
}

// dispatchChains are the iptables mode's chains whose rules kube-proxy
// writes in Go map order, one Service after another: only the multiset of
// their rules and their last rule carry meaning.
var dispatchChains = map[ipt.TableName][]string{
	ipt.NAT:    {ChainServices, ChainNodePorts},
	ipt.Filter: {ChainServices, ChainExternalServices, ChainNodePorts, ChainProxyFirewall},
}

// IsIPTablesDispatchChain reports whether the order of an iptables-mode
// chain's rules, apart from the last, has no meaning. The rules of
// different Services there match disjoint destinations, so kube-proxy's
// order and the tool's sorted order program the same thing, and a node
// that kube-proxy wrote must not plan as changed.
func IsIPTablesDispatchChain(table ipt.TableName, chain string) bool {
	return slices.Contains(dispatchChains[table], chain)
}

// OwnedIPVSSets returns the names of the ipsets the ipvs mode owns in a
// family, sorted: every set of kube-proxy's ipsetInfo table, which a
// render always holds.
func OwnedIPVSSets(family nodetable.Family) []string {
	out := make([]string, 0, len(ipvsSetInfo))
	for _, s := range ipvsSetInfo {
		out = append(out, IPVSSetName(s.name, family))
	}
	slices.Sort(out)
	return out
}
