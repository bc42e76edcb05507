package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// sendAsNode sends the probe as the node's own stack would, through the
// output hooks, from a raw socket that writes the whole IP packet.
func sendAsNode(p Probe) error {
	family := unix.AF_INET
	var to unix.Sockaddr = &unix.SockaddrInet4{Addr: p.Dst.As4()}
	if p.Dst.Is6() {
		family, to = unix.AF_INET6, &unix.SockaddrInet6{Addr: p.Dst.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer unix.Close(fd)
	// EPERM: a rule of the output hooks dropped or rejected it; the
	// events say which.
	if err := unix.Sendto(fd, p.Bytes(), 0, to); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("send the probe to %s from the node: %w", p.Dst, err)
	}
	return nil
}

// tun is the interface a probe from elsewhere arrives on: what is written
// to it the kernel receives, through the prerouting hooks.
type tun struct{ f *os.File }

// openTun creates the tun device, turns its reverse-path filter off (the
// probe's source is not routed through it) and sets it up.
func openTun() (*tun, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	t := &tun{f: os.NewFile(uintptr(fd), "/dev/net/tun")}
	ifr, err := unix.NewIfreq(TunName)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("create tun %s: %w", TunName, err)
	}
	_ = os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", TunName, "rp_filter"), []byte("0"), 0o644)
	link, err := netlink.LinkByName(TunName)
	if err == nil {
		err = netlink.LinkSetUp(link)
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("set %s up: %w", TunName, err)
	}
	return t, nil
}

func (t *tun) send(p Probe) error {
	if _, err := t.f.Write(p.Bytes()); err != nil {
		return fmt.Errorf("send the probe through %s: %w", TunName, err)
	}
	return nil
}

// close closes the device, which the kernel then deletes.
func (t *tun) close() { _ = t.f.Close() }
