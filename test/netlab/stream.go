package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// Raw SOCK_STREAM sockets for SCTP, which package net does not speak. The
// one-to-one SCTP API is the TCP one, so tests exercise this code with
// IPPROTO_TCP where the kernel has no SCTP. Sockets are non-blocking and
// wrapped in *os.File, so reads, writes and deadlines use the runtime's
// poller.

// streamSocket opens a non-blocking SOCK_STREAM socket of the IP protocol
// in the calling thread's namespace. A protocol the kernel lacks gives an
// error that wraps errors.ErrUnsupported.
func streamSocket(proto int, a netip.Addr) (int, error) {
	family := unix.AF_INET
	if a.Unmap().Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.ESOCKTNOSUPPORT) || errors.Is(err, unix.EAFNOSUPPORT) {
		return -1, fmt.Errorf("socket: %w (%w)", errors.ErrUnsupported, err)
	}
	return -1, os.NewSyscallError("socket", err)
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	a := ap.Addr().Unmap()
	if a.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// listenStream returns a listening socket bound to addr.
func listenStream(proto int, addr netip.AddrPort) (*os.File, error) {
	fd, err := streamSocket(proto, addr.Addr())
	if err != nil {
		return nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := unix.Bind(fd, sockaddr(addr)); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("listen", err)
	}
	return os.NewFile(uintptr(fd), "netlab-listener"), nil
}

// dialStream starts a non-blocking connect from src (if valid) to dst; the
// caller finishes it with waitConnected.
func dialStream(proto int, src netip.Addr, dst netip.AddrPort) (*os.File, error) {
	fd, err := streamSocket(proto, dst.Addr())
	if err != nil {
		return nil, err
	}
	if src.IsValid() {
		if err := unix.Bind(fd, sockaddr(netip.AddrPortFrom(src, 0))); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("bind", err)
		}
	}
	if err := unix.Connect(fd, sockaddr(dst)); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		return nil, os.NewSyscallError("connect", err)
	}
	return os.NewFile(uintptr(fd), "netlab-conn"), nil
}

// waitConnected waits, up to f's deadline, for its connect to complete,
// the way package net does: poll for writability, then read SO_ERROR and
// make sure the socket has a peer (wake-ups can be spurious).
func waitConnected(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = rc.Write(func(fd uintptr) bool {
		soerr, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			cerr = os.NewSyscallError("getsockopt", err)
			return true
		}
		switch e := unix.Errno(soerr); e {
		case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
			return false
		case 0, unix.EISCONN:
			_, err := unix.Getpeername(int(fd))
			return err == nil
		default:
			cerr = os.NewSyscallError("connect", e)
			return true
		}
	})
	if err != nil {
		return err
	}
	return cerr
}
