package kernel

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

func probe(src, dst string, port uint16, proto string) Probe {
	return Probe{Packet: trace.Packet{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Port: port, Protocol: proto}, SrcPort: 40000, Seq: 7}
}

// A header whose checksum field is right sums to zero.
func TestProbeChecksums(t *testing.T) {
	for _, p := range []Probe{
		probe("10.244.0.5", "10.96.0.10", 80, "tcp"),
		probe("10.244.0.5", "10.96.0.53", 53, "udp"),
		probe("fd00:10:244::5", "fd00:10:96::10", 443, "tcp"),
		probe("fd00:10:244::5", "fd00:10:96::53", 53, "udp"),
	} {
		b := p.Bytes()
		hl := 40
		if p.Src.Is4() {
			hl = 20
			if checksum(b[:20]) != 0 {
				t.Errorf("%v: IPv4 header checksum does not verify", p)
			}
		}
		l4 := b[hl:]
		if got := checksum(p.pseudoHeader(len(l4)), l4); got != 0 {
			t.Errorf("%v: %s checksum does not verify (%#x)", p, p.Protocol, got)
		}
		src, dst, ok := headerAddrs(b[:hl], l4)
		if !ok || src != p.src() || dst != p.dst() {
			t.Errorf("%v: headers read back as %v -> %v (%v)", p, src, dst, ok)
		}
		if p.Protocol == "tcp" && l4[13] != 0x02 {
			t.Errorf("%v: not a SYN: flags %#x", p, l4[13])
		}
	}
}

func step(rule string) trace.Step { return trace.Step{Table: "ip kube-proxy", Chain: "c", Rule: rule} }

func dnatResult() *trace.Result {
	return &trace.Result{Verdict: trace.DNAT, Path: []trace.Step{step("a")}, Endpoints: []trace.Endpoint{
		{Address: "10.244.0.11:8080", Path: []trace.Step{step("b1")}},
		{Address: "10.244.1.12:8080", Masquerade: true, Path: []trace.Step{step("b2")}},
	}}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *trace.Result
		o    *Outcome
		want string // "" for agreement, else a part of the first disagreement
	}{
		{"same branch", dnatResult(), &Outcome{Verdict: trace.DNAT, Endpoint: "10.244.1.12:8080", Masquerade: true, Path: []trace.Step{step("a"), step("b2")}}, ""},
		{"other endpoint", dnatResult(), &Outcome{Verdict: trace.DNAT, Endpoint: "10.244.9.9:8080", Path: []trace.Step{step("a")}}, "not one of the predicted endpoints"},
		{"masquerade", dnatResult(), &Outcome{Verdict: trace.DNAT, Endpoint: "10.244.0.11:8080", Masquerade: true, Path: []trace.Step{step("a"), step("b1")}}, "masquerade false"},
		{"path", dnatResult(), &Outcome{Verdict: trace.DNAT, Endpoint: "10.244.0.11:8080", Path: []trace.Step{step("a"), step("x")}}, "rule 2 of the path"},
		{"extra rule", dnatResult(), &Outcome{Verdict: trace.DNAT, Endpoint: "10.244.0.11:8080", Path: []trace.Step{step("a"), step("b1"), step("y")}}, "1 more rule(s) than the trace"},
		{"verdict", dnatResult(), &Outcome{Verdict: trace.Accept, Path: []trace.Step{step("a")}}, "the trace predicts dnat, the kernel's verdict is accept"},
		{"lost", dnatResult(), &Outcome{Lost: true, Path: []trace.Step{step("a")}}, "routing or the reverse-path filter"},
		{"dropped elsewhere", &trace.Result{Verdict: trace.Accept}, &Outcome{Lost: true, DroppedElsewhere: "ip t c handle 3"}, "dropped by ip t c handle 3"},
		{"decided by", &trace.Result{Verdict: trace.Drop, Path: []trace.Step{step("d")}, DecidedBy: &trace.Step{Table: "ip kube-proxy", Chain: "c", Rule: "d"}},
			&Outcome{Verdict: trace.Drop, Path: []trace.Step{step("e")}, DecidedBy: &trace.Step{Table: "ip kube-proxy", Chain: "c", Rule: "e"}}, "the trace says"},
	} {
		c := Compare(tc.r, tc.o)
		switch {
		case tc.want == "" && !c.Agrees:
			t.Errorf("%s: disagrees: %v", tc.name, c.Disagreements)
		case tc.want != "" && (c.Agrees || !strings.Contains(c.Disagreements[0], tc.want)):
			t.Errorf("%s: want a disagreement with %q, got %v", tc.name, tc.want, c.Disagreements)
		}
	}
}

func TestSettle(t *testing.T) {
	p := probe("10.244.0.5", "10.96.0.10", 80, "tcp")
	sent := p.addrs()
	o := &Outcome{}
	o.settle(true, sent, [2]string{"192.168.77.10:1024", "10.244.0.11:8080"})
	if o.Verdict != trace.DNAT || o.Endpoint != "10.244.0.11:8080" || !o.Masquerade {
		t.Errorf("translated both ways: %+v", o)
	}
	o = &Outcome{DecidedBy: &trace.Step{Rule: "-j REJECT"}}
	o.settle(false, sent, sent)
	if o.Verdict != trace.Reject {
		t.Errorf("a REJECT rule: %+v", o)
	}
	o = &Outcome{}
	o.settle(false, sent, sent)
	if !o.Lost || o.Verdict != "" {
		t.Errorf("neither left nor dropped: %+v", o)
	}
}
