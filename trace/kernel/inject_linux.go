package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// sendAsNode sends the probe as the node's own stack would, through the
// output hooks, from a raw socket that writes the whole IP packet.
func sendAsNode(p Probe, wait time.Duration) error {
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
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("bound the raw socket's send: %w", err)
	}
	// EPERM: a rule of the output hooks dropped or rejected it; the
	// events say which.
	err = unix.Sendto(fd, p.Bytes(), 0, to)
	if errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("send the probe to %s from the node: the kernel did not take it within %v", p.Dst, wait)
	}
	if err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("send the probe to %s from the node: %w", p.Dst, err)
	}
	return nil
}

// tun is the interface a probe from elsewhere arrives on: what is written
// to it the kernel receives, through the prerouting hooks.
type tun struct{ f *os.File }

// openTun creates the tun device, turns its reverse-path filter off (the
// probe's source is not routed through it) and sets it up. The device is
// non-blocking, so that a write can be bounded; wait bounds each step.
func openTun(wait time.Duration) (*tun, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(TunName)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("create tun %s: %w", TunName, err)
	}
	t := &tun{f: os.NewFile(uintptr(fd), "/dev/net/tun")}
	_ = os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", TunName, "rp_filter"), []byte("0"), 0o644)
	if err := setUp(wait); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// setUp sets the tun device up, over a netlink socket whose waits are
// bounded by wait.
func setUp(wait time.Duration) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err == nil {
		defer h.Close()
		err = h.SetSocketTimeout(wait)
	}
	var link netlink.Link
	if err == nil {
		link, err = h.LinkByName(TunName)
	}
	if err == nil {
		err = h.LinkSetUp(link)
	}
	if errors.Is(err, unix.EAGAIN) {
		err = fmt.Errorf("the kernel did not answer within %v", wait)
	}
	if err != nil {
		return fmt.Errorf("set %s up: %w", TunName, err)
	}
	return nil
}

func (t *tun) send(p Probe, wait time.Duration) error {
	_ = t.f.SetWriteDeadline(time.Now().Add(wait))
	_, err := t.f.Write(p.Bytes())
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("send the probe through %s: the device did not take it within %v", TunName, wait)
	}
	if err != nil {
		return fmt.Errorf("send the probe through %s: %w", TunName, err)
	}
	return nil
}

// close closes the device, which the kernel then deletes.
func (t *tun) close() { _ = t.f.Close() }
