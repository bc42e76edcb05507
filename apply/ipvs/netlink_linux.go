package ipvs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"

	mobyipvs "github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// ErrNoIPVS is returned by OpenKernel when the kernel has no IPVS.
var ErrNoIPVS = errors.New("IPVS not available: load the ip_vs kernel module (modprobe ip_vs) or use another --mode")

// svcFlagHashed is IP_VS_SVC_F_HASHED: the kernel sets it on every
// service it lists; it is not a setting.
const svcFlagHashed = 0x2

// NetlinkKernel is the Kernel of one network namespace, over netlink.
type NetlinkKernel struct {
	ns     netns.NsHandle // netns.None() for the caller's namespace
	ipvs   *mobyipvs.Handle
	nl     *netlink.Handle
	nfSock map[int]*nl.SocketHandle // NETLINK_NETFILTER, for raw ipset requests
	link   netlink.Link             // kube-ipvs0, cached
	// noProc reads real servers over netlink only (for the tests that
	// compare the two ways).
	noProc bool
}

// OpenKernel opens netlink sockets in the network namespace at netnsPath
// ("" for the caller's). It checks for the kernel's IPVS generic netlink
// family first: github.com/moby/ipvs resolves that family once per process
// (running `modprobe ip_vs` first), so opening it without IPVS would leave
// it unusable even after the module is loaded.
func OpenKernel(netnsPath string) (*NetlinkKernel, error) {
	k, err := openNetlink(netnsPath)
	if err != nil {
		return nil, err
	}
	if _, err := k.nl.GenlFamilyGet("IPVS"); err != nil {
		k.Close()
		return nil, fmt.Errorf("%w (%v)", ErrNoIPVS, err)
	}
	if k.ipvs, err = mobyipvs.New(netnsPath); err != nil {
		k.Close()
		return nil, fmt.Errorf("ipvs netlink: %w", err)
	}
	return k, nil
}

// openNetlink opens the rtnetlink, netfilter and generic netlink sockets.
func openNetlink(netnsPath string) (*NetlinkKernel, error) {
	k := &NetlinkKernel{ns: netns.None()}
	if netnsPath != "" {
		ns, err := netns.GetFromPath(netnsPath)
		if err != nil {
			return nil, fmt.Errorf("open network namespace %s: %w", netnsPath, err)
		}
		k.ns = ns
	}
	var err error
	if k.nl, err = netlink.NewHandleAt(k.ns, unix.NETLINK_ROUTE, unix.NETLINK_NETFILTER, unix.NETLINK_GENERIC); err != nil {
		k.Close()
		return nil, fmt.Errorf("netlink: %w", err)
	}
	sock, err := nl.GetNetlinkSocketAt(k.ns, netns.None(), unix.NETLINK_NETFILTER)
	if err != nil {
		k.Close()
		return nil, fmt.Errorf("netfilter netlink: %w", err)
	}
	k.nfSock = map[int]*nl.SocketHandle{unix.NETLINK_NETFILTER: {Socket: sock}}
	return k, nil
}

// Close releases the sockets.
func (k *NetlinkKernel) Close() {
	if k.ipvs != nil {
		k.ipvs.Close()
	}
	if k.nl != nil {
		k.nl.Close()
	}
	for _, s := range k.nfSock {
		s.Close()
	}
	if k.ns != netns.None() {
		k.ns.Close()
	}
}

var protoNumbers = map[ipvs.Protocol]uint16{ipvs.TCP: unix.IPPROTO_TCP, ipvs.UDP: unix.IPPROTO_UDP, ipvs.SCTP: unix.IPPROTO_SCTP}

func protoName(n uint16) ipvs.Protocol {
	for p, num := range protoNumbers {
		if num == n {
			return p
		}
	}
	return ""
}

func afOf(family nodetable.Family) uint16 {
	if family == nodetable.IPv6 {
		return unix.AF_INET6
	}
	return unix.AF_INET
}

// toService converts a virtual server the way kube-proxy does
// (toIPVSService): a host netmask, the flags as they are.
func toService(vs *ipvs.VirtualServer) *mobyipvs.Service {
	s := &mobyipvs.Service{
		Address: net.IP(vs.Address.AsSlice()), Protocol: protoNumbers[vs.Protocol], Port: vs.Port,
		SchedName: vs.Scheduler, Flags: uint32(vs.Flags), Timeout: vs.Timeout,
		AddressFamily: unix.AF_INET, Netmask: 0xffffffff,
	}
	if vs.Address.Is6() {
		s.AddressFamily, s.Netmask = unix.AF_INET6, 128
	}
	return s
}

var fwdMethods = map[ipvs.ForwardMethod]uint32{
	ipvs.Masquerade: mobyipvs.ConnectionFlagMasq, "l": mobyipvs.ConnectionFlagLocalNode,
	"i": mobyipvs.ConnectionFlagTunnel, "g": mobyipvs.ConnectionFlagDirectRoute,
}

func toDest(r ipvs.RealServer) *mobyipvs.Destination {
	return &mobyipvs.Destination{Address: net.IP(r.Address.AsSlice()), Port: r.Port, Weight: int(r.Weight), ConnectionFlags: fwdMethods[r.Method]}
}

func fromDest(d *mobyipvs.Destination) (ipvs.RealServer, diff.IPVSConns) {
	a, _ := netip.AddrFromSlice(d.Address)
	m := ipvs.Masquerade
	for name, f := range fwdMethods {
		if f == d.ConnectionFlags&mobyipvs.ConnectionFlagFwdMask {
			m = name
		}
	}
	return ipvs.RealServer{Address: a.Unmap(), Port: d.Port, Method: m, Weight: int32(d.Weight)},
		diff.IPVSConns{Active: d.ActiveConnections, Inactive: d.InactiveConnections}
}

// Services implements Kernel: the virtual servers in one netlink dump,
// their real servers from /proc/net/ip_vs in one read (see procread.go).
func (k *NetlinkKernel) Services(family nodetable.Family) ([]*ipvs.VirtualServer, map[diff.IPVSDestKey]diff.IPVSConns, error) {
	svcs, err := k.ipvs.GetServices()
	if err != nil {
		return nil, nil, fmt.Errorf("list IPVS services: %w", err)
	}
	listed, err := k.readProcDests()
	if err != nil || k.noProc {
		listed = nil // every virtual server's real servers over netlink
	}
	conns := map[diff.IPVSDestKey]diff.IPVSConns{}
	var out []*ipvs.VirtualServer
	for _, s := range svcs {
		proto := protoName(s.Protocol)
		if s.FWMark != 0 || s.AddressFamily != afOf(family) || proto == "" {
			continue
		}
		a, _ := netip.AddrFromSlice(s.Address)
		vs := &ipvs.VirtualServer{Protocol: proto, Address: a.Unmap(), Port: s.Port, Scheduler: s.SchedName,
			Flags: ipvs.Flags(s.Flags &^ svcFlagHashed), Timeout: s.Timeout}
		dests, ok := listed[procKey{proto, netip.AddrPortFrom(vs.Address, vs.Port)}]
		if !ok {
			if dests, err = k.netlinkDests(s); err != nil {
				return nil, nil, fmt.Errorf("list real servers of %s: %w", vs.Service(), err)
			}
		}
		for _, d := range dests {
			vs.RealServers = append(vs.RealServers, d.real)
			conns[diff.IPVSDestKey{Service: diff.IPVSKey(vs), Dest: netip.AddrPortFrom(d.real.Address, d.real.Port)}] = d.conns
		}
		sortReals(vs.RealServers)
		out = append(out, vs)
	}
	slices.SortFunc(out, func(a, b *ipvs.VirtualServer) int {
		return compareKeys(diff.IPVSKey(a), diff.IPVSKey(b))
	})
	return out, conns, nil
}

// netlinkDests reads one virtual server's real servers over netlink.
func (k *NetlinkKernel) netlinkDests(s *mobyipvs.Service) ([]procDest, error) {
	dests, err := k.ipvs.GetDestinations(s)
	if err != nil {
		return nil, err
	}
	out := make([]procDest, 0, len(dests))
	for _, d := range dests {
		r, c := fromDest(d)
		out = append(out, procDest{real: r, conns: c})
	}
	return out, nil
}

// Dests implements Kernel.
func (k *NetlinkKernel) Dests(vs *ipvs.VirtualServer) ([]ipvs.RealServer, []diff.IPVSConns, error) {
	dests, err := k.ipvs.GetDestinations(toService(vs))
	if errors.Is(err, unix.ESRCH) {
		return nil, nil, nil // no such virtual server: no real servers
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list real servers of %s: %w", vs.Service(), err)
	}
	var rs []ipvs.RealServer
	var cs []diff.IPVSConns
	for _, d := range dests {
		r, c := fromDest(d)
		rs, cs = append(rs, r), append(cs, c)
	}
	return rs, cs, nil
}

// AddService implements Kernel. A scheduler whose module the kernel lacks
// is named in the error.
func (k *NetlinkKernel) AddService(vs *ipvs.VirtualServer) error {
	return schedErr(vs, k.ipvs.NewService(toService(vs)))
}

// EditService implements Kernel: IPVS_CMD_SET_SERVICE changes the
// scheduler, flags and timeout of the live service, keeping its
// connections and real servers.
func (k *NetlinkKernel) EditService(vs *ipvs.VirtualServer) error {
	return schedErr(vs, k.ipvs.UpdateService(toService(vs)))
}

func schedErr(vs *ipvs.VirtualServer, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("IPVS scheduler %q not available (load the ip_vs_%s module): %w", vs.Scheduler, vs.Scheduler, err)
	}
	return err
}

// DeleteService implements Kernel.
func (k *NetlinkKernel) DeleteService(vs *ipvs.VirtualServer) error {
	return gone(k.ipvs.DelService(toService(vs)), unix.ESRCH)
}

// AddDest implements Kernel.
func (k *NetlinkKernel) AddDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return k.ipvs.NewDestination(toService(vs), toDest(r))
}

// EditDest implements Kernel.
func (k *NetlinkKernel) EditDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return k.ipvs.UpdateDestination(toService(vs), toDest(r))
}

// DeleteDest implements Kernel.
func (k *NetlinkKernel) DeleteDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	return gone(k.ipvs.DelDestination(toService(vs), toDest(r)), unix.ENOENT, unix.ESRCH)
}

// gone turns "no such object" errors of a delete into success.
func gone(err error, notFound ...unix.Errno) error {
	for _, e := range notFound {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}

// WriteSysctl implements Kernel: /proc/sys/net is the namespace of the
// thread that opens it.
func (k *NetlinkKernel) WriteSysctl(name, value string) error {
	return k.inNamespace(func() error {
		return os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644)
	})
}

func (k *NetlinkKernel) inNamespace(fn func() error) error {
	if k.ns == netns.None() {
		return fn()
	}
	return nsthread.Do(k.ns, fn)
}
