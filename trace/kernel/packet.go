package kernel

import (
	"encoding/binary"
	"net/netip"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// Probe is the packet the check injects: the first packet of a new
// connection, a TCP SYN or a UDP datagram, from Src:SrcPort.
type Probe struct {
	trace.Packet
	SrcPort uint16
	// Seq is the TCP sequence number, or the IPv4 identification.
	Seq uint32
}

const (
	protoTCP = 6
	protoUDP = 17
	// udpPayload marks the datagram for anyone who captures it.
	udpPayload = "svcproxy-trace"
)

// Bytes is the packet with its IP header, with every checksum set: the
// kernel's connection tracking drops packets with bad checksums as
// invalid before the proxy's rules could see them.
func (p Probe) Bytes() []byte {
	l4 := p.transport()
	if p.Src.Is4() {
		return append(p.ipv4Header(len(l4)), l4...)
	}
	return append(p.ipv6Header(len(l4)), l4...)
}

func (p Probe) proto() byte {
	if p.Protocol == "udp" {
		return protoUDP
	}
	return protoTCP
}

// transport is the TCP or UDP header (and payload) with its checksum.
func (p Probe) transport() []byte {
	var b []byte
	if p.proto() == protoTCP {
		b = make([]byte, 20)
		binary.BigEndian.PutUint32(b[4:], p.Seq)
		b[12] = 5 << 4 // data offset: 5 words, no options
		b[13] = 0x02   // SYN
		binary.BigEndian.PutUint16(b[14:], 64240)
	} else {
		b = make([]byte, 8, 8+len(udpPayload))
		b = append(b, udpPayload...)
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
	}
	binary.BigEndian.PutUint16(b[0:], p.SrcPort)
	binary.BigEndian.PutUint16(b[2:], p.Port)
	sum := checksum(p.pseudoHeader(len(b)), b)
	if sum == 0 && p.proto() == protoUDP {
		sum = 0xffff // 0 means "no checksum" in UDP
	}
	off := 16
	if p.proto() == protoUDP {
		off = 6
	}
	binary.BigEndian.PutUint16(b[off:], sum)
	return b
}

// pseudoHeader is what the TCP and UDP checksums cover of the IP header.
func (p Probe) pseudoHeader(l4len int) []byte {
	b := append(p.Src.AsSlice(), p.Dst.AsSlice()...)
	if p.Src.Is4() {
		return append(b, 0, p.proto(), byte(l4len>>8), byte(l4len))
	}
	return append(b, 0, 0, byte(l4len>>8), byte(l4len), 0, 0, 0, p.proto())
}

func (p Probe) ipv4Header(l4len int) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+l4len))
	binary.BigEndian.PutUint16(h[4:], uint16(p.Seq))
	binary.BigEndian.PutUint16(h[6:], 0x4000) // don't fragment
	h[8] = 64
	h[9] = p.proto()
	copy(h[12:16], p.Src.AsSlice())
	copy(h[16:20], p.Dst.AsSlice())
	binary.BigEndian.PutUint16(h[10:], checksum(h))
	return h
}

func (p Probe) ipv6Header(l4len int) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(l4len))
	h[6] = p.proto()
	h[7] = 64
	copy(h[8:24], p.Src.AsSlice())
	copy(h[24:40], p.Dst.AsSlice())
	return h
}

// checksum is the Internet checksum (RFC 1071) of the parts, laid end to
// end.
func checksum(parts ...[]byte) uint16 {
	var sum uint32
	odd, carry := false, byte(0)
	for _, part := range parts {
		for _, c := range part {
			if odd {
				sum += uint32(carry)<<8 | uint32(c)
			} else {
				carry = c
			}
			odd = !odd
		}
	}
	if odd {
		sum += uint32(carry) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// headerAddrs reads the source and destination addresses and ports of an
// IPv4 or IPv6 header followed by a TCP or UDP header, as a trace event
// carries them (the network and the transport header apart).
func headerAddrs(network, transport []byte) (src, dst netip.AddrPort, ok bool) {
	var s, d netip.Addr
	switch {
	case len(network) >= 20 && network[0]>>4 == 4:
		s, _ = netip.AddrFromSlice(network[12:16])
		d, _ = netip.AddrFromSlice(network[16:20])
	case len(network) >= 40 && network[0]>>4 == 6:
		s, _ = netip.AddrFromSlice(network[8:24])
		d, _ = netip.AddrFromSlice(network[24:40])
	default:
		return src, dst, false
	}
	if len(transport) < 4 {
		return src, dst, false
	}
	sp, dp := binary.BigEndian.Uint16(transport), binary.BigEndian.Uint16(transport[2:])
	return netip.AddrPortFrom(s, sp), netip.AddrPortFrom(d, dp), true
}

func (p Probe) src() netip.AddrPort { return netip.AddrPortFrom(p.Src, p.SrcPort) }
func (p Probe) dst() netip.AddrPort { return netip.AddrPortFrom(p.Dst, p.Port) }
