package userspace

import (
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// A UDP proxy socket bound to the wildcard address receives datagrams that
// the portal rules REDIRECTed (to the incoming interface's address) or
// DNATed (to the node IP). Its replies must leave from exactly that
// address: conntrack only maps a reply back to the Service address when
// its source is the translated destination, and a reply from another
// address reaches the client from an unexpected source, which a connected
// client socket drops. The kernel's choice of source address gets this
// wrong for traffic the node sends to itself, so the proxy asks for each
// datagram's destination (IP_PKTINFO, IPV6_RECVPKTINFO) and sets it as
// the source of the replies. v1.25 did not, and its replies to node-local
// UDP clients could be lost.

// enablePktinfo asks the kernel for the destination of every datagram.
func enablePktinfo(conn *net.UDPConn, v6 bool) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if v6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// replyPktinfo returns the control message that sends replies from the
// destination address found in oob, a received datagram's control data;
// nil when the socket is bound to one address (the kernel then uses that)
// or oob holds no destination.
func replyPktinfo(oob []byte, listen netip.Addr) []byte {
	if !listen.IsUnspecified() {
		return nil
	}
	dst := pktinfoDst(oob)
	switch {
	case !dst.IsValid():
		return nil
	case dst.Is4():
		return unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: dst.As4()})
	}
	return unix.PktInfo6(&unix.Inet6Pktinfo{Addr: dst.As16()})
}

// pktinfoDst is the header destination address in a received datagram's
// control data, or the zero Addr.
func pktinfoDst(oob []byte) netip.Addr {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return netip.Addr{}
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO &&
			len(m.Data) >= unix.SizeofInet4Pktinfo:
			// struct in_pktinfo: ifindex, spec_dst, addr.
			return netip.AddrFrom4([4]byte(m.Data[8:12]))
		case m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_PKTINFO &&
			len(m.Data) >= unix.SizeofInet6Pktinfo:
			// struct in6_pktinfo: addr, ifindex.
			return netip.AddrFrom16([16]byte(m.Data[0:16]))
		}
	}
	return netip.Addr{}
}
