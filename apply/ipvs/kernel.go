// Package ipvs reads and writes the kernel state of kube-proxy's ipvs
// mode: IPVS virtual and real servers (through github.com/moby/ipvs), the
// kube-ipvs0 dummy interface and its addresses and the ipsets (through
// github.com/vishvananda/netlink), and the helper iptables chains (through
// apply/iptables). Plan diffs the kernel against a render; Apply runs the
// change set in an order that never blackholes traffic midway.
package ipvs

import (
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// Kernel is the ipvs-mode state of one network namespace, one object per
// call. NetlinkKernel is the real one; the apply logic is also tested
// against an in-memory fake. Deleting an object that is already gone is
// not an error: the state wanted is reached.
type Kernel interface {
	// Services lists the virtual servers of a family with their real
	// servers, and the real servers' connection counts. Firewall-mark
	// services and protocols other than TCP, UDP and SCTP are left out:
	// kube-proxy makes none.
	Services(family nodetable.Family) ([]*ipvs.VirtualServer, map[diff.IPVSDestKey]diff.IPVSConns, error)
	// Dests lists one virtual server's real servers and their connection
	// counts (parallel slices); none when the virtual server is gone.
	Dests(vs *ipvs.VirtualServer) ([]ipvs.RealServer, []diff.IPVSConns, error)
	AddService(vs *ipvs.VirtualServer) error
	EditService(vs *ipvs.VirtualServer) error
	DeleteService(vs *ipvs.VirtualServer) error
	AddDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error
	EditDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error
	DeleteDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error

	// Device reports whether kube-ipvs0 exists and lists its addresses of
	// a family (without IPv6 link-local ones), with their prefix lengths.
	Device(family nodetable.Family) (exists bool, addrs []netip.Prefix, err error)
	CreateDevice() error
	DeleteDevice() error
	AddAddress(p netip.Prefix) error
	DeleteAddress(p netip.Prefix) error

	// Set reads one ipset with its entries spelled as `ipset save` spells
	// them, or returns nil when there is no such set.
	Set(name string) (*ipvs.Set, error)
	CreateSet(s *ipvs.Set) error
	DestroySet(name string) error
	AddEntry(s *ipvs.Set, entry string) error
	DeleteEntry(s *ipvs.Set, entry string) error

	// WriteSysctl writes a sysctl of the namespace ("net/ipv4/vs/conntrack").
	WriteSysctl(name, value string) error
}
