package ipvs

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// dummy returns kube-ipvs0, or nil when it does not exist.
func (k *NetlinkKernel) dummy() (netlink.Link, error) {
	if k.link != nil {
		return k.link, nil
	}
	l, err := k.nl.LinkByName(ipvs.DummyDevice)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", ipvs.DummyDevice, err)
	}
	k.link = l
	return l, nil
}

// Device implements Kernel.
func (k *NetlinkKernel) Device(family nodetable.Family) (bool, []netip.Prefix, error) {
	k.link = nil // look it up afresh: it may have been deleted by hand
	l, err := k.dummy()
	if l == nil || err != nil {
		return false, nil, err
	}
	nlFamily := netlink.FAMILY_V4
	if family == nodetable.IPv6 {
		nlFamily = netlink.FAMILY_V6
	}
	addrs, err := k.nl.AddrList(l, nlFamily)
	if err != nil {
		return true, nil, fmt.Errorf("list addresses of %s: %w", ipvs.DummyDevice, err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		if !ok || ip.Unmap().IsLinkLocalUnicast() {
			continue
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return true, out, nil
}

// CreateDevice implements Kernel. Like kube-proxy, it leaves the
// interface down: addresses on it are local all the same.
func (k *NetlinkKernel) CreateDevice() error {
	err := k.nl.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: ipvs.DummyDevice}})
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	k.link = nil
	return nil
}

// DeleteDevice implements Kernel.
func (k *NetlinkKernel) DeleteDevice() error {
	l, err := k.dummy()
	if l == nil || err != nil {
		return err
	}
	k.link = nil
	return k.nl.LinkDel(l)
}

func (k *NetlinkKernel) addr(p netip.Prefix) (netlink.Link, *netlink.Addr, error) {
	l, err := k.dummy()
	if err == nil && l == nil {
		err = fmt.Errorf("%s does not exist", ipvs.DummyDevice)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		// The interface stays down, so duplicate address detection would
		// never finish and the address would stay tentative.
		a.Flags = unix.IFA_F_NODAD
	}
	return l, a, err
}

// AddAddress implements Kernel.
func (k *NetlinkKernel) AddAddress(p netip.Prefix) error {
	l, a, err := k.addr(p)
	if err != nil {
		return err
	}
	if err := k.nl.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// DeleteAddress implements Kernel.
func (k *NetlinkKernel) DeleteAddress(p netip.Prefix) error {
	l, a, err := k.addr(p)
	if err != nil {
		return err
	}
	return gone(k.nl.AddrDel(l, a), unix.EADDRNOTAVAIL, unix.ENXIO)
}

func sortReals(rs []ipvs.RealServer) {
	slices.SortFunc(rs, func(a, b ipvs.RealServer) int {
		return cmp.Or(a.Address.Compare(b.Address), cmp.Compare(a.Port, b.Port))
	})
}

func compareKeys(a, b diff.IPVSServiceKey) int {
	return cmp.Or(a.Address.Addr().Compare(b.Address.Addr()), cmp.Compare(a.Address.Port(), b.Address.Port()), cmp.Compare(a.Protocol, b.Protocol))
}
