package traffic

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// packet builds a minimal IP packet with a transport header that starts
// with the source and destination ports.
func packet(proto byte, dst netip.AddrPort) []byte {
	l4 := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 40000), dst.Port())
	l4 = append(l4, make([]byte, 4)...)
	if dst.Addr().Is4() {
		h := make([]byte, 20)
		h[0], h[9] = 0x45, proto
		d := dst.Addr().As4()
		copy(h[16:], d[:])
		return append(h, l4...)
	}
	h := make([]byte, 40)
	h[0], h[6] = 0x60, proto
	d := dst.Addr().As16()
	copy(h[24:], d[:])
	return append(h, l4...)
}

func TestParseIP(t *testing.T) {
	v4, v6 := netip.MustParseAddrPort("192.0.2.20:443"), netip.MustParseAddrPort("[fd00:96::80]:53")
	tests := []struct {
		name  string
		pkt   []byte
		proto netlab.Proto
		dst   netip.AddrPort
		ok    bool
	}{
		{"ipv4 tcp", packet(ipProtoTCP, v4), netlab.TCP, v4, true},
		{"ipv6 udp", packet(ipProtoUDP, v6), netlab.UDP, v6, true},
		{"icmp", packet(1, v4), "", netip.AddrPort{}, false},
		{"truncated", packet(ipProtoTCP, v4)[:21], "", netip.AddrPort{}, false},
		{"arp-like", []byte{0x00, 0x01}, "", netip.AddrPort{}, false},
		{"empty", nil, "", netip.AddrPort{}, false},
	}
	for _, tt := range tests {
		proto, dst, ok := parseIP(tt.pkt)
		if proto != tt.proto || dst != tt.dst || ok != tt.ok {
			t.Errorf("%s: parseIP = %q, %s, %v; want %q, %s, %v", tt.name, proto, dst, ok, tt.proto, tt.dst, tt.ok)
		}
	}
}
