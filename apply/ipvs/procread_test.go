package ipvs

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// procSample is /proc/net/ip_vs as the kernel prints it (the format of
// ip_vs_info_seq_show), with every kind of line.
const procSample = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port Forward Weight ActiveConn InActConn
TCP  0A600001:0050 rr 
  -> 0AF40005:1F90      Masq    1      2          3         
  -> 0AF40106:1F90      Masq    0      0          17        
UDP  0A60000A:0035 sh persistent 10800 FFFFFFFF
SCTP  0A60000B:0BB8 rr ops 
  -> 0AF40007:0BB8      Local   5      0          0         
FWM  00000001 rr 
  -> 0AF40009:0050      Route   1      0          0         
TCP  [fd00:0096:0000:0000:0000:0000:0000:000a]:01BB wrr 
  -> [fd00:0001:0000:0000:0000:0000:0000:0002]:20FB      Tunnel  3      1          0         
`

func TestParseProcIPVS(t *testing.T) {
	got, err := parseProcIPVS(strings.NewReader(procSample))
	if err != nil {
		t.Fatal(err)
	}
	real := func(a string, port uint16, m ipvs.ForwardMethod, w int32) ipvs.RealServer {
		return ipvs.RealServer{Address: netip.MustParseAddr(a), Port: port, Method: m, Weight: w}
	}
	key := func(p ipvs.Protocol, ap string) procKey { return procKey{p, netip.MustParseAddrPort(ap)} }
	want := map[procKey][]procDest{
		key(ipvs.TCP, "10.96.0.1:80"): {
			{real("10.244.0.5", 8080, ipvs.Masquerade, 1), diff.IPVSConns{Active: 2, Inactive: 3}},
			{real("10.244.1.6", 8080, ipvs.Masquerade, 0), diff.IPVSConns{Inactive: 17}},
		},
		key(ipvs.UDP, "10.96.0.10:53"):    nil,
		key(ipvs.SCTP, "10.96.0.11:3000"): {{real("10.244.0.7", 3000, "l", 5), diff.IPVSConns{}}},
		key(ipvs.TCP, "[fd00:96::a]:443"): {{real("fd00:1::2", 8443, "i", 3), diff.IPVSConns{Active: 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
	}
}

// TestParseProcIPVSRefuses checks that a line the parser does not
// understand is an error (Services then reads over netlink), never a
// virtual server with fewer real servers than the kernel has.
func TestParseProcIPVSRefuses(t *testing.T) {
	head := "IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n"
	for _, body := range []string{
		"TCP  0A600001:0050 rr\n  -> 0AF40005:1F90      Bypass  1      0          0\n",
		"TCP  0A600001:0050 rr\n  -> 0AF40005:1F90      Masq    1      0\n",
		"TCP  0A6000:0050 rr\n",
		"TCP  0A600001:10050 rr\n",
		"ICMP  0A600001:0050 rr\n",
		"TCP  [10.0.0.1]:0050 rr\n",
		"TCP  0A600001:0050 rr\n  -> 0AF40005:1F90      Masq    x      0          0\n",
	} {
		if got, err := parseProcIPVS(strings.NewReader(head + body)); err == nil {
			t.Errorf("%q: parsed as %+v, want an error", body, got)
		}
	}
}
