package ipvs

import (
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Ownership says what the ipvs mode owns in the kernel. render declares
// it; diff and apply act on it. Everything it does not name is foreign
// and is never changed: kube-proxy deletes every virtual server outside
// its excluded ranges, the tool only those it can tell are its own.
type Ownership struct {
	// Chains are the mode's helper chains in the filter and nat tables.
	Chains *ipt.Ownership `json:"chains"`
	// Sets are the ipsets the mode owns, per family, sorted: no other set
	// is ever read, changed or destroyed.
	Sets map[nodetable.Family][]string `json:"sets"`
	// PortSets name, per family and protocol, the bitmap:port sets of the
	// NodePorts: a virtual server on any address with such a port is a
	// NodePort virtual server on a node address, and the mode's.
	PortSets map[nodetable.Family]map[Protocol]string `json:"portSets"`
	// AddrPortSets name, per family, the hash:ip,port set of the SCTP
	// NodePorts, whose entries name the address too.
	AddrPortSets map[nodetable.Family]string `json:"addrPortSets"`
	// ExcludeCIDRs are kube-proxy's --ipvs-exclude-cidrs: a live virtual
	// server whose address lies in one is never deleted, even one the mode
	// would otherwise own. One that is desired is still kept up to date.
	ExcludeCIDRs []netip.Prefix `json:"excludeCIDRs,omitempty"`
}

// Excluded reports whether addr lies in ExcludeCIDRs.
func (o *Ownership) Excluded(addr netip.Addr) bool {
	for _, p := range o.ExcludeCIDRs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
