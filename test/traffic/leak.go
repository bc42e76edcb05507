package traffic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// A silent connection is not enough to prove a drop. The node's default
// route points at client, which does not forward, so a packet to an
// external or load-balancer IP that no rule claims also vanishes: it is
// routed on untranslated, as a real node would send it to its gateway.
// leakWatch tells the two apart by capturing, on client's eth0, the packets
// the node routes there.

// leakWatch is a packet socket on client's side of the node's default
// route. It sees every packet arriving there, not those client sends.
type leakWatch struct {
	fd int
}

// watchLeaks opens the capture in ns (the lab's client).
func watchLeaks(ns netlab.NS) (*leakWatch, error) {
	fd := -1
	err := ns.Do(func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		ifi, err := net.InterfaceByName(netlab.PeerIface)
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return os.NewSyscallError("setsockopt PACKET_IGNORE_OUTGOING", err)
		}
		sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
		return os.NewSyscallError("bind", unix.Bind(fd, sa))
	})
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("capture on %s in %s: %w", netlab.PeerIface, ns.Name(), err)
	}
	return &leakWatch{fd: fd}, nil
}

func (w *leakWatch) close() { unix.Close(w.fd) }

// leaked drains what has arrived so far and counts the packets of proto
// to dst.
func (w *leakWatch) leaked(proto netlab.Proto, dst netip.AddrPort) (int, error) {
	buf := make([]byte, 2048)
	n := 0
	for {
		m, err := unix.Read(w.fd, buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return n, nil
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return n, os.NewSyscallError("read", err)
		}
		if p, d, ok := parseIP(buf[:m]); ok && p == proto && d == dst {
			n++
		}
	}
}

// IP protocol numbers of the transports probes use.
const (
	ipProtoTCP = 6
	ipProtoUDP = 17
)

// parseIP returns the transport and destination of an IPv4 or IPv6 packet
// (without IPv6 extension headers), if it is TCP or UDP.
func parseIP(pkt []byte) (netlab.Proto, netip.AddrPort, bool) {
	if len(pkt) < 1 {
		return "", netip.AddrPort{}, false
	}
	var next byte
	var dst netip.Addr
	var l4 []byte
	switch pkt[0] >> 4 {
	case 4:
		ihl := int(pkt[0]&0x0f) * 4
		if len(pkt) < 20 || len(pkt) < ihl+4 {
			return "", netip.AddrPort{}, false
		}
		next, dst, l4 = pkt[9], netip.AddrFrom4([4]byte(pkt[16:20])), pkt[ihl:]
	case 6:
		if len(pkt) < 44 {
			return "", netip.AddrPort{}, false
		}
		next, dst, l4 = pkt[6], netip.AddrFrom16([16]byte(pkt[24:40])), pkt[40:]
	default:
		return "", netip.AddrPort{}, false
	}
	var proto netlab.Proto
	switch next {
	case ipProtoTCP:
		proto = netlab.TCP
	case ipProtoUDP:
		proto = netlab.UDP
	default:
		return "", netip.AddrPort{}, false
	}
	return proto, netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:4])), true
}

// htons converts a 16-bit value to network byte order, as packet sockets
// take their protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
