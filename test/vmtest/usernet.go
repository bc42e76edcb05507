package vmtest

import (
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
)

// qemu's user-mode network (SLIRP) as Config.UserNet sets it up: the
// guest is GuestAddr on a /24 whose HostLoopback is the host's 127.0.0.1
// (qemu connects there on the guest's behalf). There is no DHCP, DNS or
// default route in the guest, so the guest reaches nothing but the host's
// loopback: traffic stays on this machine.
const (
	HostLoopback = "10.0.2.2"
	GuestAddr    = "10.0.2.15/24"
)

// userNetArgs are qemu's arguments for the NIC: a virtio-net device on a
// user-mode backend that hands out no addresses and resolves no names.
var userNetArgs = []string{
	"-netdev", "user,id=usernet,net=10.0.2.0/24,host=" + HostLoopback + ",dns=10.0.2.3,ipv6=off",
	"-device", "virtio-net-pci,netdev=usernet",
}

// SetupUserNet brings up the guest's user-mode NIC (the only non-loopback
// link of the guest's root namespace) with GuestAddr. It waits a little
// for the virtio driver to create the link. Only the guest calls it, in
// the root namespace, for a boot with Config.UserNet.
func SetupUserNet() error {
	var link netlink.Link
	for deadline := time.Now().Add(10 * time.Second); link == nil; {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Type() == "device" && l.Attrs().Flags&net.FlagLoopback == 0 {
				link = l
			}
		}
		if link == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("vmtest: no user-mode NIC in the guest (booted without Config.UserNet?)")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	addr, err := netlink.ParseAddr(GuestAddr)
	if err != nil {
		return err
	}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("vmtest: address %s on %s: %w", GuestAddr, link.Attrs().Name, err)
	}
	return netlink.LinkSetUp(link)
}
