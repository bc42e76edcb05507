package nftables

import (
	"net/netip"
	"strings"
	"testing"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

var testNode = &trace.Node{
	Addresses:         []netip.Addr{netip.MustParseAddr("192.168.0.10")},
	PodCIDRs:          []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")},
	PodInterface:      "veth0",
	ExternalInterface: "eth0",
}

func table(rules string, sets ...*nft.Set) *nft.Ruleset {
	return &nft.Ruleset{Family: nft.IPv4, Table: "t", Sets: sets, Chains: []*nft.Chain{
		{Name: "pre", Base: &nft.BaseChain{Type: nft.NATType, Hook: nft.PreroutingHook, Priority: "dstnat", Policy: nft.Accept},
			Rules: rulesOf(rules)},
		{Name: "svc", Rules: rulesOf("numgen random mod 3 vmap { 0 : goto ep1, 1 : goto ep2, 2 : goto ep3 }")},
		{Name: "ep1", Rules: rulesOf("update @aff1 { ip saddr }\nmeta l4proto tcp dnat to 10.244.0.5:8080")},
		{Name: "ep2", Rules: rulesOf("meta l4proto tcp dnat to 10.244.0.6:8080")},
		{Name: "ep3", Rules: rulesOf("meta l4proto tcp dnat to 10.244.0.7:8080")},
	}}
}

func rulesOf(s string) []nft.Rule {
	var out []nft.Rule
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, nft.Rule(l))
		}
	}
	return out
}

func affinitySet(elements ...string) *nft.Set {
	s := &nft.Set{Name: "aff1", Type: "ipv4_addr", Flags: []nft.SetFlag{nft.FlagDynamic, nft.FlagTimeout}, Timeout: 180e9}
	for _, e := range elements {
		s.Elements = append(s.Elements, nft.Element{Key: e})
	}
	return s
}

func run(t *testing.T, rs *nft.Ruleset, src, dst string) *trace.Result {
	t.Helper()
	ev, err := New(rs, testNode)
	if err != nil {
		t.Fatal(err)
	}
	p := trace.Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Port: 80, Protocol: "tcp"}
	r, err := trace.Run(ev, testNode, p, testNode.Infer(p.Src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestUnknownExpressionFailsNamingTheRule(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"tcp dport 80 accept", `unknown expression "tcp dport"`},
		{"ip daddr 10.0.0.1 log prefix x", "unknown expression"},
		{"limit rate 10/second accept", "unknown expression"},
		{"meta l4proto tcp snat to 10.0.0.1", `unknown expression "snat to"`},
		{"ip daddr @nosuchset drop", `no set "@nosuchset"`},
		{"jump nowhere", `unknown chain "nowhere"`},
	} {
		_, err := New(table(tc.rule, affinitySet()), testNode)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("%s: error %v, want one naming the rule and %q", tc.rule, err, tc.want)
		}
	}
}

func TestNumgenAndAffinity(t *testing.T) {
	rules := "ip saddr @aff1 goto ep1\nip daddr 10.96.0.1 meta l4proto . th dport { tcp . 80 } goto svc"
	r := run(t, table(rules, affinitySet()), "10.244.0.9", "10.96.0.1")
	if r.Verdict != trace.DNAT || len(r.Endpoints) != 3 || !r.Affinity.On() || r.Affinity.TimeoutSeconds != 180 {
		t.Fatalf("got %+v", r)
	}
	for _, ep := range r.Endpoints {
		if ep.Probability != 0.333333 {
			t.Errorf("%s: probability %v, want 1/3", ep.Address, ep.Probability)
		}
	}
	// A client the live affinity set remembers goes to its endpoint only.
	live := affinitySet("10.244.0.9 timeout 3m expires 2m59s")
	r = run(t, table(rules, live), "10.244.0.9", "10.96.0.1")
	if len(r.Endpoints) != 1 || r.Endpoints[0].Address != "10.244.0.5:8080" || r.Endpoints[0].Probability != 1 {
		t.Errorf("remembered client: %+v", r.Endpoints)
	}
	if r = run(t, table(rules, affinitySet()), "10.244.0.9", "10.96.0.2"); r.Verdict != trace.Accept || r.Note != trace.NotAService {
		t.Errorf("other address: %+v", r)
	}
}

func TestIntervalSetsAndMarks(t *testing.T) {
	rs := table(`ip saddr != { 10.0.0.0/8, 192.168.1.1-192.168.1.9 } drop
meta mark set meta mark | 0x00004000
meta mark & 0x00004000 != 0x00000000 meta l4proto tcp dnat to 10.244.0.7`, affinitySet())
	if r := run(t, rs, "203.0.113.1", "10.96.0.1"); r.Verdict != trace.Drop || !strings.Contains(r.DecidedBy.Rule, "drop") {
		t.Errorf("outside the set: %+v", r)
	}
	r := run(t, rs, "192.168.1.5", "10.96.0.1")
	if r.Verdict != trace.DNAT || r.Endpoints[0].Address != "10.244.0.7:80" {
		t.Errorf("in the range, marked: %+v", r)
	}
}

// TestNumgenCascade checks the compact layout's endpoint choice, one
// "numgen random mod N-i 0" rule per endpoint: each endpoint 1/N, as
// kube-proxy's numgen map.
func TestNumgenCascade(t *testing.T) {
	rs := table("ip daddr 10.96.0.1 goto svc", affinitySet())
	rs.Chains[1].Rules = rulesOf("numgen random mod 3 0 meta l4proto tcp dnat to 10.244.0.5:8080\n" +
		"numgen random mod 2 0 meta l4proto tcp dnat to 10.244.0.6:8080\n" +
		"meta l4proto tcp dnat to 10.244.0.7:8080")
	r := run(t, rs, "10.244.0.9", "10.96.0.1")
	if r.Verdict != trace.DNAT || len(r.Endpoints) != 3 {
		t.Fatalf("got %+v", r)
	}
	for _, ep := range r.Endpoints {
		if ep.Probability != 0.333333 {
			t.Errorf("%s: probability %v, want 1/3", ep.Address, ep.Probability)
		}
	}
	if _, err := New(table("numgen random mod 2 2 drop", affinitySet()), testNode); err == nil {
		t.Error("numgen random mod 2 2: a value the modulus never gives was accepted")
	}
}

// TestNumgenSharedMap checks the compact layout's endpoint choice, numgen
// with an offset into a named map: the draw picks keys offset..offset+N-1,
// each 1/N, and a key the map lacks is a lookup that fails.
func TestNumgenSharedMap(t *testing.T) {
	m := &nft.Set{Name: "eps", Type: "numgen random mod 1", DataType: "ip daddr . th dport", Typeof: true}
	for k, v := range map[string]string{"4095": "10.244.9.9 . 1", "4096": "10.244.0.5 . 8080", "4097": "10.244.0.6 . 8080", "4098": "10.244.0.7 . 8080", "4099": "10.244.9.9 . 2"} {
		m.Elements = append(m.Elements, nft.Element{Key: k, Value: v})
	}
	rs := table("ip daddr 10.96.0.1 goto svc", affinitySet(), m)
	rs.Chains[1].Rules = rulesOf("meta l4proto tcp dnat ip to numgen random mod 3 offset 4096 map @eps")
	r := run(t, rs, "10.244.0.9", "10.96.0.1")
	if r.Verdict != trace.DNAT || len(r.Endpoints) != 3 {
		t.Fatalf("got %+v", r)
	}
	for i, ep := range r.Endpoints {
		if want := "10.244.0." + string(rune('5'+i)) + ":8080"; ep.Address != want || ep.Probability != 0.333333 {
			t.Errorf("endpoint %d: %s with probability %v, want %s with 1/3", i, ep.Address, ep.Probability, want)
		}
	}
	// Draws past the map's keys fail the lookup: the rule does not match,
	// and the packet goes on to the next rule.
	rs.Chains[1].Rules = rulesOf("meta l4proto tcp dnat ip to numgen random mod 5 offset 4097 map @eps\ndrop")
	r = run(t, rs, "10.244.0.9", "10.96.0.1")
	if len(r.Endpoints) != 3 || r.Endpoints[0].Probability != 0.2 || !strings.Contains(r.Note, "drop with probability 0.4") {
		t.Errorf("keys 4097..4101 of which 3 exist: %+v, %q", r.Endpoints, r.Note)
	}
	if _, err := New(table("meta l4proto tcp dnat ip to numgen random mod 2 offset 1 map { 0 : 10.0.0.1 . 1, 1 : 10.0.0.2 . 1 }", affinitySet()), testNode); err == nil {
		t.Error("an offset into an anonymous map was accepted")
	}
	if _, err := New(table("meta l4proto tcp dnat ip to numgen random mod 2 offset 4294967295 map @eps", affinitySet(), m), testNode); err == nil {
		t.Error("an offset whose last draw passes 2^32 was accepted")
	}
}
