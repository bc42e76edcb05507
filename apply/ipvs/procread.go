package ipvs

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// Reading every virtual server's real servers over netlink takes one
// request per virtual server: at 10k Services, 9 s of a one-endpoint change
// in the test VM, of which the write was 2 ms. /proc/net/ip_vs lists them
// all in one read, so Services takes the virtual servers from netlink (all
// their attributes, in one dump) and their real servers from there, and
// falls back to netlink for any virtual server the file does not list (one
// added between the two reads) or when the file cannot be read or parsed.
//
// The file is no free lunch: the kernel hands it out a page per read and
// finds its place again from the first virtual server each time, so its
// cost grows faster than the table. In the test VM (BenchmarkIPVSRead,
// TCG on a loaded host) it read 1k Services x 3 in 0.74 s against 6.3 s
// over netlink, and 10k in 19 s against 29 s.
//
// The file's format (net/netfilter/ipvs/ip_vs_ctl.c, ip_vs_info_seq_show),
// after three header lines:
//
//	TCP  0A600001:0050 rr
//	  -> 0AF40005:1F90      Masq    1      0          0
//	UDP  [fd00:0096:0000:0000:0000:0000:0000:000a]:0035 rr persistent 10800 FFFFFFFF
//	FWM  00000001 rr
//
// A virtual server is "PROTO  ADDR:PORT SCHEDULER [ops] [persistent T MASK]",
// an IPv4 address as 8 hex digits of its value, an IPv6 one in brackets, the
// port as 4 hex digits. A real server is "  -> ADDR:PORT FORWARD WEIGHT
// ACTIVE INACTIVE", FORWARD one of Masq, Local, Tunnel, Route. Firewall-mark
// services (FWM) are skipped, with their real servers.

// procKey names a virtual server as the file does.
type procKey struct {
	proto ipvs.Protocol
	addr  netip.AddrPort
}

// procDest is one real server as the file lists it.
type procDest struct {
	real  ipvs.RealServer
	conns diff.IPVSConns
}

// procForward maps the file's forwarding names to ipvsadm's letters.
var procForward = map[string]ipvs.ForwardMethod{"Masq": ipvs.Masquerade, "Local": "l", "Tunnel": "i", "Route": "g"}

// parseProcIPVS parses /proc/net/ip_vs: the real servers of every virtual
// server that is not a firewall-mark one.
func parseProcIPVS(r io.Reader) (map[procKey][]procDest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	out := map[procKey][]procDest{}
	var cur *procKey // nil before the first service and under FWM ones
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n <= 3 {
			continue // the version and the two column headers
		}
		fields := strings.Fields(line)
		var err error
		switch {
		case len(fields) > 0 && fields[0] == "->":
			err = addProcDest(out, cur, fields)
		case len(fields) > 0 && fields[0] == "FWM":
			cur = nil
		default:
			cur, err = procVirtualServer(fields)
			if err == nil {
				out[*cur] = nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("/proc/net/ip_vs line %d %q: %w", n, line, err)
		}
	}
	return out, sc.Err()
}

// procVirtualServer parses a virtual server's line.
func procVirtualServer(fields []string) (*procKey, error) {
	if len(fields) < 3 {
		return nil, fmt.Errorf("want PROTO ADDR:PORT SCHEDULER")
	}
	proto := ipvs.Protocol(strings.ToLower(fields[0]))
	if proto != ipvs.TCP && proto != ipvs.UDP && proto != ipvs.SCTP {
		return nil, fmt.Errorf("unknown protocol")
	}
	ap, err := parseProcAddrPort(fields[1])
	if err != nil {
		return nil, err
	}
	return &procKey{proto: proto, addr: ap}, nil
}

// addProcDest parses a real server's line into the current service's list.
func addProcDest(out map[procKey][]procDest, cur *procKey, fields []string) error {
	if cur == nil {
		return nil // a firewall-mark service's real server
	}
	if len(fields) != 6 {
		return fmt.Errorf("want -> ADDR:PORT FORWARD WEIGHT ACTIVE INACTIVE")
	}
	ap, err := parseProcAddrPort(fields[1])
	if err != nil {
		return err
	}
	method, ok := procForward[fields[2]]
	if !ok {
		return fmt.Errorf("unknown forwarding method %q", fields[2])
	}
	var n [3]int64
	for i, s := range fields[3:] {
		if n[i], err = strconv.ParseInt(s, 10, 32); err != nil {
			return fmt.Errorf("bad number %q", s)
		}
	}
	out[*cur] = append(out[*cur], procDest{
		real:  ipvs.RealServer{Address: ap.Addr(), Port: ap.Port(), Method: method, Weight: int32(n[0])},
		conns: diff.IPVSConns{Active: int(n[1]), Inactive: int(n[2])},
	})
	return nil
}

// parseProcAddrPort parses "0A600001:0050" or "[fd00:...]:0035".
func parseProcAddrPort(s string) (netip.AddrPort, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(s[i+1:], 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad port in %q", s)
	}
	host := s[:i]
	var addr netip.Addr
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		addr, err = netip.ParseAddr(host[1 : len(host)-1])
		if err == nil && !addr.Is6() {
			err = fmt.Errorf("not IPv6")
		}
	} else {
		var v uint64
		v, err = strconv.ParseUint(host, 16, 32)
		if len(host) != 8 {
			err = fmt.Errorf("want 8 hex digits")
		}
		addr = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad address %q: %v", s, err)
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
