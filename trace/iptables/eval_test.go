package iptables

import (
	"net/netip"
	"strings"
	"testing"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

var testNode = &trace.Node{
	Addresses:         []netip.Addr{netip.MustParseAddr("192.168.0.10")},
	PodCIDRs:          []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")},
	PodInterface:      "veth0",
	ExternalInterface: "eth0",
}

func load(t *testing.T, text string) (*Evaluator, error) {
	t.Helper()
	rs, err := ipt.Parse([]byte(text), "IPv4")
	if err != nil {
		t.Fatal(err)
	}
	return New(rs, testNode, Options{})
}

func traceOf(t *testing.T, text, src, dst string, port uint16) *trace.Result {
	t.Helper()
	ev, err := load(t, text)
	if err != nil {
		t.Fatal(err)
	}
	p := trace.Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Port: port, Protocol: "tcp"}
	r, err := trace.Run(ev, testNode, p, testNode.Infer(p.Src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestUnknownMatchOrTargetFailsNamingTheRule(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"-m physdev --physdev-in eth0 -j ACCEPT", `unknown match "-m physdev --physdev-in"`},
		{"-m tcp --tcp-flags SYN SYN -j ACCEPT", `unknown match "-m tcp --tcp-flags"`},
		{"-j LOG --log-prefix x", `unknown target "LOG"`},
		{"-o eth0 -j ACCEPT", `unknown option "-o"`},
		{"-m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT", "no ipsets"},
		{"-m addrtype --dst-type UNICAST -j ACCEPT", `unknown address type "UNICAST"`},
	} {
		_, err := load(t, "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT "+tc.rule+"\nCOMMIT\n")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("%s: error %v, want one naming the rule and %q", tc.rule, err, tc.want)
		}
	}
}

const threeEndpoints = `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SVC-A - [0:0]
:KUBE-SEP-1 - [0:0]
:KUBE-SEP-2 - [0:0]
:KUBE-SEP-3 - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A PREROUTING -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A
-A POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-SVC-A -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-1
-A KUBE-SVC-A -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-2
-A KUBE-SVC-A -j KUBE-SEP-3
-A KUBE-SEP-1 -s 10.244.0.5/32 -j KUBE-MARK-MASQ
-A KUBE-SEP-1 -p tcp -m tcp -j DNAT --to-destination 10.244.0.5:8080
-A KUBE-SEP-2 -p tcp -m tcp -j DNAT --to-destination 10.244.0.6:8080
-A KUBE-SEP-3 -p tcp -m tcp -j DNAT --to-destination 10.244.0.7:8080
COMMIT
`

func TestProbabilitiesMultiplyAlongTheChain(t *testing.T) {
	r := traceOf(t, threeEndpoints, "10.244.0.5", "10.96.0.1", 80)
	if r.Verdict != trace.DNAT || len(r.Endpoints) != 3 {
		t.Fatalf("got %+v", r)
	}
	for _, ep := range r.Endpoints {
		if ep.Probability != 0.333333 {
			t.Errorf("%s: probability %v, want 1/3", ep.Address, ep.Probability)
		}
		// Hairpin: only the connection back to the client itself is masqueraded.
		if want := ep.Address == "10.244.0.5:8080"; ep.Masquerade != want {
			t.Errorf("%s: masquerade %v, want %v", ep.Address, ep.Masquerade, want)
		}
	}
	if !r.Masquerade {
		t.Error("the result does not say that one branch is masqueraded")
	}
	if other := traceOf(t, threeEndpoints, "10.244.0.9", "10.96.0.1", 81); other.Verdict != trace.Accept || other.Note != trace.NotAService {
		t.Errorf("another port: %+v", other)
	}
}

func TestGotoReturnAndPolicy(t *testing.T) {
	rules := `*filter
:INPUT DROP [0:0]
:FORWARD ACCEPT [0:0]
:A - [0:0]
:B - [0:0]
-A INPUT -j A
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A FORWARD -g B
-A FORWARD -j REJECT --reject-with icmp-port-unreachable
-A A -p tcp -m tcp --dport 22 -j RETURN
-A A -j ACCEPT
-A B -d 10.1.0.0/16 -j RETURN
COMMIT
`
	if r := traceOf(t, rules, "203.0.113.1", "192.168.0.10", 22); r.Verdict != trace.Accept || len(r.Path) != 3 {
		t.Errorf("RETURN then ACCEPT in INPUT: %+v", r)
	}
	if r := traceOf(t, rules, "203.0.113.1", "192.168.0.10", 80); r.Verdict != trace.Accept || r.Path[len(r.Path)-1].Chain != "A" {
		t.Errorf("ACCEPT in A: %+v", r)
	}
	// A goto'd chain that returns returns from FORWARD too: its policy applies.
	if r := traceOf(t, rules, "203.0.113.1", "10.1.2.3", 80); r.Verdict != trace.Accept {
		t.Errorf("goto then RETURN: %+v", r)
	}
	rules = strings.Replace(rules, "-A INPUT -j A\n", "", 1)
	if r := traceOf(t, rules, "203.0.113.1", "192.168.0.10", 80); r.Verdict != trace.Drop || r.DecidedBy.Rule != "policy DROP" {
		t.Errorf("INPUT policy DROP: %+v", r)
	}
}
