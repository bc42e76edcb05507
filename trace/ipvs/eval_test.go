package ipvs

import (
	"net/netip"
	"testing"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

var vip = netip.MustParseAddr("10.96.0.1")

func ruleset(t *testing.T, helper string, rss ...ipvs.RealServer) *ipvs.Ruleset {
	t.Helper()
	rs := &ipvs.Ruleset{Family: "IPv4", Addresses: []netip.Addr{vip},
		VirtualServers: []*ipvs.VirtualServer{{Protocol: ipvs.TCP, Address: vip, Port: 80, Scheduler: "wrr", RealServers: rss}},
		Sets:           []*ipvs.Set{{Name: "SRC", Type: ipvs.HashIPPortNet, Entries: []string{"10.96.0.1,tcp:80,203.0.113.0/24"}}}}
	if helper != "" {
		var err error
		if rs.IPTables, err = ipt.Parse([]byte(helper), "IPv4"); err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

func traceVIP(t *testing.T, rs *ipvs.Ruleset, src string) *trace.Result {
	t.Helper()
	n := &trace.Node{Addresses: []netip.Addr{netip.MustParseAddr("192.168.0.10")}, ExternalInterface: "eth0"}
	ev, n, err := New(rs, n)
	if err != nil {
		t.Fatal(err)
	}
	p := trace.Packet{Src: netip.MustParseAddr(src), Dst: vip, Port: 80, Protocol: "tcp"}
	r, err := trace.Run(ev, n, p, n.Infer(p.Src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func rs(addr string, w int32) ipvs.RealServer {
	return ipvs.RealServer{Address: netip.MustParseAddr(addr), Port: 8080, Method: ipvs.Masquerade, Weight: w}
}

func TestRealServersShareTheWeights(t *testing.T) {
	r := traceVIP(t, ruleset(t, "", rs("10.244.0.5", 1), rs("10.244.0.6", 3), rs("10.244.0.7", 0)), "203.0.113.9")
	if r.Verdict != trace.DNAT || r.Scheduler != "wrr" || len(r.Endpoints) != 2 {
		t.Fatalf("got %+v", r)
	}
	if r.Endpoints[0].Probability != 0.25 || r.Endpoints[1].Probability != 0.75 {
		t.Errorf("probabilities %v %v, want 0.25 0.75 (a draining server of weight 0 gets none)", r.Endpoints[0].Probability, r.Endpoints[1].Probability)
	}
	if r := traceVIP(t, ruleset(t, ""), "203.0.113.9"); r.Verdict != trace.Accept || r.Note == trace.NotAService || len(r.Endpoints) != 0 {
		t.Errorf("no real server: %+v", r)
	}
}

func TestHelperChainsSeeTheIPSets(t *testing.T) {
	helper := `*filter
:INPUT ACCEPT [0:0]
:FW - [0:0]
-A INPUT -j FW
-A FW -m set --match-set SRC dst,dst,src -j RETURN
-A FW -j DROP
COMMIT
`
	set := ruleset(t, helper, rs("10.244.0.5", 1))
	if r := traceVIP(t, set, "203.0.113.9"); r.Verdict != trace.DNAT {
		t.Errorf("source in the set's range: %+v", r)
	}
	if r := traceVIP(t, set, "198.51.100.9"); r.Verdict != trace.Drop {
		t.Errorf("source outside the set's range: %+v", r)
	}
	bad := ruleset(t, "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m set --match-set NOPE dst -j DROP\nCOMMIT\n")
	if _, _, err := New(bad, &trace.Node{}); err == nil {
		t.Error("a match on an unknown ipset loaded")
	}
}
