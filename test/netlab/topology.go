package netlab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// veth describes one link between the node and a peer namespace. All
// netlink calls go through handles bound to a lab namespace, never to the
// caller's.
type veth struct {
	nodeIface string
	nodeIndex int            // ifindex of nodeIface, see clientIfindex
	nodeAddrs []netip.Prefix // on nodeIface
	peerAddrs []netip.Prefix // on PeerIface in the peer
	gateways  []netip.Addr   // on-link default gateways of the peer
	routes    []netip.Prefix // node routes to the peer, scope link
}

// Node-side ifindexes are fixed so that they never equal the peer's. A
// veth whose ifindex equals its peer's (both 2 in fresh namespaces) does
// not count as an "urgent" linkwatch event, and the kernel then delays its
// carrier, and the real qdisc, by up to a second.
const (
	clientIfindex  = 10
	client2Ifindex = 11
	podIfindexBase = 100 // + the pod's number
)

// setupNode sets the node's forwarding sysctls and its primary addresses.
func (l *Lab) setupNode() error {
	kv := []string{
		"net.ipv4.ip_forward", "1",
		"net.ipv4.conf.all.route_localnet", "1",
		"net.ipv4.conf.all.send_redirects", "0",
		"net.ipv4.conf.default.send_redirects", "0",
	}
	addrs := []netip.Addr{NodeIP}
	if l.cfg.ipv6 {
		kv = append(kv, "net.ipv6.conf.all.forwarding", "1")
		addrs = append(addrs, NodeIPv6)
	}
	if err := l.node.sysctl(kv...); err != nil {
		return err
	}
	lo, err := l.nodeNL.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("node lo: %w", err)
	}
	for _, a := range addrs {
		if err := addAddr(l.nodeNL, lo, netip.PrefixFrom(a, a.BitLen())); err != nil {
			return fmt.Errorf("node lo: %w", err)
		}
	}
	return nil
}

// nodeDefaultRoutes points the node's default routes at client, with the
// node IP as preferred source: on a real node the node IP sits on the
// interface of the default route, so locally generated packets to cluster
// IPs and NodePorts leave from it.
func (l *Lab) nodeDefaultRoutes() error {
	link, err := l.nodeNL.LinkByName(ClientIface)
	if err != nil {
		return fmt.Errorf("node %s: %w", ClientIface, err)
	}
	routes := []*netlink.Route{{Gw: net.IP(ClientIP.AsSlice()), Src: net.IP(NodeIP.AsSlice())}}
	if l.cfg.ipv6 {
		routes = append(routes, &netlink.Route{Gw: net.IP(ClientIPv6.AsSlice()), Src: net.IP(NodeIPv6.AsSlice())})
	}
	for _, r := range routes {
		r.LinkIndex = link.Attrs().Index
		if err := l.nodeNL.RouteAdd(r); err != nil {
			return fmt.Errorf("node default route via %s: %w", r.Gw, err)
		}
	}
	return nil
}

// loUp brings up the namespace's loopback.
func (l *Lab) loUp(ns NS) error {
	h, err := netlink.NewHandleAt(ns.s.h, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns.Name(), err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("lo up in %s: %w", ns.Name(), err)
	}
	return nil
}

// attach creates the veth pair node:v.nodeIface <-> peer:PeerIface and
// configures both ends.
func (l *Lab) attach(peer NS, v veth) error {
	peerNL, err := netlink.NewHandleAt(peer.s.h, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", peer.Name(), err)
	}
	defer peerNL.Close()

	attrs := netlink.NewLinkAttrs()
	attrs.Name = v.nodeIface
	attrs.Index = v.nodeIndex
	pair := &netlink.Veth{LinkAttrs: attrs, PeerName: PeerIface, PeerNamespace: netlink.NsFd(peer.s.h)}
	if err := l.nodeNL.LinkAdd(pair); err != nil {
		return fmt.Errorf("veth %s to %s: %w", v.nodeIface, peer.Name(), err)
	}
	nodeLink, err := l.nodeNL.LinkByName(v.nodeIface)
	if err != nil {
		return fmt.Errorf("node %s: %w", v.nodeIface, err)
	}
	peerLink, err := peerNL.LinkByName(PeerIface)
	if err != nil {
		return fmt.Errorf("%s %s: %w", peer.Name(), PeerIface, err)
	}
	if err := configure(l.nodeNL, nodeLink, v.nodeAddrs, nil, v.routes); err != nil {
		return fmt.Errorf("node %s: %w", v.nodeIface, err)
	}
	if err := configure(peerNL, peerLink, v.peerAddrs, v.gateways, nil); err != nil {
		return fmt.Errorf("%s %s: %w", peer.Name(), PeerIface, err)
	}
	if err := waitReady(l.node); err != nil {
		return err
	}
	return waitReady(peer)
}

// ifOperUp is IF_OPER_UP of RFC 2863 operstates (linux/if.h).
const ifOperUp = 6

// readyTimeout bounds waitReady; it normally takes well under a millisecond.
const readyTimeout = 5 * time.Second

// waitReady waits until every link that is set up in the namespace is
// operationally up and has a real qdisc. The kernel does both
// asynchronously (linkwatch) after "set up"; until then the noop qdisc
// drops every packet, and a lost first SYN costs a one-second retransmit.
func waitReady(ns NS) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		var pending string
		err := ns.Do(func() (err error) {
			pending, err = notReadyLink()
			return err
		})
		if err != nil || pending == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("link %s in %s not ready after %v", pending, ns.Name(), readyTimeout)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// notReadyLink names a link of the calling thread's namespace that is up
// but cannot carry packets yet, or returns "".
func notReadyLink() (string, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETLINK, syscall.AF_UNSPEC)
	if err != nil {
		return "", os.NewSyscallError("netlink", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return "", err
	}
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWLINK || len(m.Data) < syscall.SizeofIfInfomsg {
			continue
		}
		flags := binary.NativeEndian.Uint32(m.Data[8:12]) // ifinfomsg.ifi_flags
		if flags&syscall.IFF_UP == 0 || flags&syscall.IFF_LOOPBACK != 0 {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return "", err
		}
		var name, qdisc string
		var oper byte
		for _, a := range attrs {
			switch a.Attr.Type {
			case syscall.IFLA_IFNAME:
				name = string(bytes.TrimRight(a.Value, "\x00"))
			case syscall.IFLA_QDISC:
				qdisc = string(bytes.TrimRight(a.Value, "\x00"))
			case unix.IFLA_OPERSTATE:
				oper = a.Value[0]
			}
		}
		if oper != ifOperUp || qdisc == "" || qdisc == "noop" {
			return name, nil
		}
	}
	return "", nil
}

// configure adds addresses, sets the link up (routes need that), then adds
// on-link default routes and scope-link routes.
func configure(h *netlink.Handle, link netlink.Link, addrs []netip.Prefix, gws []netip.Addr, routes []netip.Prefix) error {
	for _, p := range addrs {
		if err := addAddr(h, link, p); err != nil {
			return err
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	idx := link.Attrs().Index
	for _, gw := range gws {
		r := &netlink.Route{LinkIndex: idx, Gw: net.IP(gw.AsSlice()), Flags: int(netlink.FLAG_ONLINK)}
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("default route via %s: %w", gw, err)
		}
	}
	for _, p := range routes {
		r := &netlink.Route{LinkIndex: idx, Dst: ipNet(p), Scope: netlink.SCOPE_LINK}
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("route %s: %w", p, err)
		}
	}
	return nil
}

func addAddr(h *netlink.Handle, link netlink.Link, p netip.Prefix) error {
	a := &netlink.Addr{IPNet: ipNet(p)}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD // usable at once, not "tentative"
	}
	if err := h.AddrAdd(link, a); err != nil {
		return fmt.Errorf("address %s: %w", p, err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
