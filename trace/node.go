package trace

import (
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Node is what the trace knows of the node: its own addresses, the pod
// range that marks traffic from its pods, and the interface names that
// packets arrive on.
type Node struct {
	Name string
	// Addresses are the node's local addresses (node IPs and host
	// addresses); loopback is always local.
	Addresses []netip.Addr
	// ServiceAddresses are local too, but only as Service addresses (ipvs
	// mode's kube-ipvs0): NodePorts do not answer there.
	ServiceAddresses []netip.Addr
	// PodCIDRs are the ranges whose sources count as this node's pods:
	// the node's spec.podCIDRs, else --cluster-cidr.
	PodCIDRs []netip.Prefix
	// ClusterCIDRs are the cluster's pod ranges (--cluster-cidr): a source
	// there but outside PodCIDRs is a pod on another node.
	ClusterCIDRs []netip.Prefix
	// PodInterface is the input interface of a pod's packets (it matters
	// to --detect-local-mode BridgeInterface and InterfaceNamePrefix).
	PodInterface string
	// ExternalInterface is the input interface of packets from elsewhere.
	ExternalInterface string
}

// IsLocal reports whether a is one of the node's own addresses: what
// `-m addrtype --src-type/--dst-type LOCAL` and `fib ... type local` test.
func (n *Node) IsLocal(a netip.Addr) bool {
	return a.IsLoopback() || slices.Contains(n.Addresses, a) || slices.Contains(n.ServiceAddresses, a)
}

// Entry is the inferred (or forced) entry point of a packet.
type Entry struct {
	Via Via `json:"via"`
	// Reason says why, for the text output.
	Reason string `json:"reason"`
	// Forced is set when --via chose it.
	Forced bool `json:"forced,omitempty"`
	// InInterface is the input interface the trace assumes ("" for
	// packets the node sends).
	InInterface string `json:"inInterface,omitempty"`
}

// Infer chooses the entry point of a packet from src: one of the node's
// addresses or loopback is the node's own traffic, a source inside the
// node's pod range comes from a local pod, anything else from outside.
func (n *Node) Infer(src netip.Addr) Entry {
	if n.IsLocal(src) {
		return n.entry(ViaNode, src.String()+" is one of the node's own addresses")
	}
	for _, p := range n.PodCIDRs {
		if p.Contains(src) {
			return n.entry(ViaPod, src.String()+" is inside the pod range "+p.String())
		}
	}
	for _, p := range n.ClusterCIDRs {
		if p.Contains(src) {
			return n.entry(ViaExternal, src.String()+" is a pod on another node (in the cluster range "+p.String()+
				", not this node's pod range): it arrives on the node's interface")
		}
	}
	return n.entry(ViaExternal, src.String()+" is neither the node's nor in its pod range: it arrives on the node's interface")
}

// Force returns the entry point v, chosen with --via.
func (n *Node) Force(v Via) Entry {
	e := n.entry(v, "forced with --via")
	e.Forced = true
	return e
}

func (n *Node) entry(v Via, reason string) Entry {
	e := Entry{Via: v, Reason: reason}
	switch v {
	case ViaPod:
		e.InInterface = n.PodInterface
	case ViaExternal:
		e.InInterface = n.ExternalInterface
	}
	return e
}

// NodeOptions are what a Node takes from the proxy's configuration.
type NodeOptions struct {
	// HostAddresses are the node's interface addresses (any family); the
	// node IPs are added to them.
	HostAddresses []netip.Addr
	// ClusterCIDRs are --cluster-cidr (any family).
	ClusterCIDRs []netip.Prefix
	// PodInterface is the input interface of local pods' packets;
	// "veth0" when empty.
	PodInterface string
}

// NodeOf describes the node a table was built for, in the table's family.
// The pod range is the Node's spec.podCIDRs, or the cluster range when
// the Node has none.
func NodeOf(t *nodetable.ServiceTable, o NodeOptions) *Node {
	n := &Node{Name: t.Node.Name, PodCIDRs: t.Node.PodCIDRs, ExternalInterface: "eth0", PodInterface: o.PodInterface}
	if n.PodInterface == "" {
		n.PodInterface = "veth0"
	}
	for _, a := range o.HostAddresses {
		if nodetable.FamilyOf(a) == t.Family {
			n.Addresses = append(n.Addresses, a)
		}
	}
	for _, a := range t.Node.IPs {
		if !slices.Contains(n.Addresses, a) {
			n.Addresses = append(n.Addresses, a)
		}
	}
	for _, p := range o.ClusterCIDRs {
		if nodetable.FamilyOf(p.Addr()) == t.Family {
			n.ClusterCIDRs = append(n.ClusterCIDRs, p.Masked())
		}
	}
	if len(n.PodCIDRs) == 0 {
		n.PodCIDRs = n.ClusterCIDRs
	}
	return n
}
