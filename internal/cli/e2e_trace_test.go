package cli

import (
	"encoding/json"
	"testing"
)

// liveVerdict runs trace --live in the node and returns the verdict.
func (n *e2eNode) liveVerdict(t *testing.T, args []string, rest ...string) traceJSON {
	t.Helper()
	r := expect(t, n.run("trace", append(append(append([]string{}, args...), "--live", "-o", "json"), rest...)...), ExitOK)
	var got traceJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	return got
}

// TestE2ETraceLive applies the example in a lab node, then traces against
// the kernel's ruleset: first it agrees with the render, then a hand edit
// (the ClusterIP's dispatch deleted) shows in the live trace only.
func TestE2ETraceLive(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	pkt := []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80"}

	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	if got := n.liveVerdict(t, nftablesArgs, pkt...); got.Verdict != "dnat" || len(got.Endpoints) != 3 {
		t.Fatalf("live trace after apply: %+v", got)
	}
	n.nft("delete", "element", "ip", "kube-proxy", "service-ips", "{ 10.96.0.10 . tcp . 80 }")
	got := n.liveVerdict(t, nftablesArgs, pkt...)
	if got.Verdict != "drop" && got.Verdict != "reject" && got.Verdict != "accept" || len(got.Endpoints) != 0 {
		t.Fatalf("live trace after the element was deleted by hand: %+v", got)
	}
	rendered := expect(t, n.run("trace", append(append([]string{}, nftablesArgs...), append(pkt, "-o", "json")...)...), ExitOK)
	var want traceJSON
	if err := json.Unmarshal([]byte(rendered.stdout), &want); err != nil || want.Verdict != "dnat" {
		t.Fatalf("the rendered trace should still DNAT: %v %+v", err, want)
	}

	iptArgs := exampleArgs
	expect(t, n.run("apply", iptArgs...), ExitOK)
	if got := n.liveVerdict(t, iptArgs, pkt...); got.Verdict != "dnat" || len(got.Endpoints) != 3 {
		t.Fatalf("live iptables trace after apply: %+v", got)
	}
	n.ipt("-t", "nat", "-I", "KUBE-SERVICES", "1", "-d", "10.96.0.10/32", "-p", "tcp", "--dport", "80", "-j", "RETURN")
	got = n.liveVerdict(t, iptArgs, pkt...)
	if got.Verdict != "accept" || len(got.Path) < 2 || got.Path[1].Rule != "-d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j RETURN" {
		t.Fatalf("live iptables trace after a RETURN was inserted by hand: %+v", got)
	}
}
