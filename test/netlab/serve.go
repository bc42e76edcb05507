package netlab

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Proto is a transport protocol, spelled as iptables and nftables spell it.
type Proto string

// The protocols a Service port can have.
const (
	TCP  Proto = "tcp"
	UDP  Proto = "udp"
	SCTP Proto = "sctp"
)

// Serve starts a backend inside the namespace. It answers every TCP
// connection, SCTP association or UDP datagram on addr with one line,
// "<name> <client addr:port>\n", and (TCP, SCTP) closes. The client address
// is the source the backend saw, after any SNAT. The backend lives until
// the lab is torn down. For SCTP, a kernel without SCTP gives an error for
// which IsUnsupported is true.
//
// For UDP bind a specific address: replies from a wildcard socket take the
// source address that routing picks.
func (ns NS) Serve(proto Proto, addr netip.AddrPort, name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return fmt.Errorf("netlab: serve %s on %s: invalid reply name %q", proto, addr, name)
	}
	if ns.lab == nil {
		return errors.New("netlab: zero NS")
	}
	var c io.Closer
	var serve func()
	err := ns.Do(func() error {
		var err error
		c, serve, err = listen(proto, addr, name)
		return err
	})
	if err == nil {
		err = ns.lab.track(c, serve)
	}
	if err != nil {
		return fmt.Errorf("netlab: serve %s on %s in %s: %w", proto, addr, ns.Name(), err)
	}
	return nil
}

// ServeTCP serves the pod's name on port of each of its addresses.
func (p *Pod) ServeTCP(port uint16) error { return p.serve(TCP, port) }

// ServeUDP serves the pod's name on port of each of its addresses.
func (p *Pod) ServeUDP(port uint16) error { return p.serve(UDP, port) }

// ServeSCTP serves the pod's name on port of each of its addresses. Check
// the error with IsUnsupported to skip where the kernel has no SCTP.
func (p *Pod) ServeSCTP(port uint16) error { return p.serve(SCTP, port) }

func (p *Pod) serve(proto Proto, port uint16) error {
	for _, ip := range p.ips {
		if err := p.ns.Serve(proto, netip.AddrPortFrom(ip, port), p.name); err != nil {
			return err
		}
	}
	return nil
}

// listen opens the listening socket in the calling thread's namespace and
// returns it with its serve loop.
func listen(proto Proto, addr netip.AddrPort, name string) (io.Closer, func(), error) {
	network := string(proto) + "4"
	if addr.Addr().Is6() && !addr.Addr().Is4In6() {
		network = string(proto) + "6"
	}
	switch proto {
	case TCP:
		ln, err := net.ListenTCP(network, net.TCPAddrFromAddrPort(addr))
		if err != nil {
			return nil, nil, err
		}
		return ln, func() { serveTCP(ln, name) }, nil
	case UDP:
		conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(addr))
		if err != nil {
			return nil, nil, err
		}
		return conn, func() { serveUDP(conn, name) }, nil
	case SCTP:
		f, err := listenStream(unix.IPPROTO_SCTP, addr)
		if err != nil {
			return nil, nil, err
		}
		return f, func() { serveStream(f, name) }, nil
	}
	return nil, nil, fmt.Errorf("unknown protocol %q", proto)
}

// replyLine is what a backend sends: its name and the client it saw.
func replyLine(name string, client netip.AddrPort) []byte {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	return []byte(name + " " + client.String() + "\n")
}

// acceptBackoff is how long a serve loop waits after a failed accept or
// read, e.g. EMFILE, before it tries again.
const acceptBackoff = 10 * time.Millisecond

func serveTCP(ln *net.TCPListener, name string) {
	for {
		conn, err := ln.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(acceptBackoff)
			continue
		}
		conn.SetDeadline(time.Now().Add(time.Second))
		conn.Write(replyLine(name, conn.RemoteAddr().(*net.TCPAddr).AddrPort()))
		conn.Close()
	}
}

func serveUDP(conn *net.UDPConn, name string) {
	buf := make([]byte, 2048)
	for {
		_, from, err := conn.ReadFromUDPAddrPort(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(acceptBackoff)
			continue
		}
		conn.WriteToUDPAddrPort(replyLine(name, from), from)
	}
}

// serveStream is serveTCP for a raw SOCK_STREAM socket (SCTP one-to-one
// style), since package net has no SCTP.
func serveStream(ln *os.File, name string) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return
	}
	for {
		var nfd int
		var sa unix.Sockaddr
		var aerr error
		err := rc.Read(func(fd uintptr) bool {
			nfd, sa, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		})
		if err != nil { // closed
			return
		}
		if aerr != nil {
			time.Sleep(acceptBackoff)
			continue
		}
		conn := os.NewFile(uintptr(nfd), "netlab-conn")
		conn.SetDeadline(time.Now().Add(time.Second))
		conn.Write(replyLine(name, addrPort(sa)))
		conn.Close()
	}
}
