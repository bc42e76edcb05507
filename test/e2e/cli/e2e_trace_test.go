package cli

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/jsoncontract"
)

// liveVerdict runs trace --live in the node and returns the verdict.
func (n *e2eNode) liveVerdict(t *testing.T, args []string, rest ...string) jsoncontract.Trace {
	t.Helper()
	r := expect(t, n.run("trace", append(append(append([]string{}, args...), "--live", "-o", "json"), rest...)...), ExitOK)
	var got jsoncontract.Trace
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
	var want jsoncontract.Trace
	if err := json.Unmarshal([]byte(rendered.stdout), &want); err != nil || want.Verdict != "dnat" {
		t.Fatalf("the rendered trace should still DNAT: %v %+v", err, want)
	}

	iptArgs := exampleArgs
	expectBeside(t, n.run("apply", iptArgs...), ExitOK, "nftables")
	if got := n.liveVerdict(t, iptArgs, pkt...); got.Verdict != "dnat" || len(got.Endpoints) != 3 {
		t.Fatalf("live iptables trace after apply: %+v", got)
	}
	n.ipt("-t", "nat", "-I", "KUBE-SERVICES", "1", "-d", "10.96.0.10/32", "-p", "tcp", "--dport", "80", "-j", "RETURN")
	got = n.liveVerdict(t, iptArgs, pkt...)
	if got.Verdict != "accept" || len(got.Path) < 2 || got.Path[1].Rule != "-d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j RETURN" {
		t.Fatalf("live iptables trace after a RETURN was inserted by hand: %+v", got)
	}
}

// renderedTrace runs trace without --live in the node and returns it.
func (n *e2eNode) renderedTrace(t *testing.T, args []string, rest ...string) jsoncontract.Trace {
	t.Helper()
	r := expect(t, n.run("trace", append(append(append([]string{}, args...), "-o", "json"), rest...)...), ExitOK)
	var got jsoncontract.Trace
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r)
	}
	return got
}

// TestE2ETraceLiveUserspace applies the userspace mode's portal rules in
// a lab node, then traces a pod's connection to a ClusterIP against the
// kernel's portal rules: it agrees with the render (the portal rule, the
// proxy port, the endpoints); then, with the Service's portal rule
// deleted by hand, only the live trace loses the proxy.
func TestE2ETraceLiveUserspace(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	pkt := []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80"}

	expect(t, n.run("apply", userspaceArgs...), ExitOK)
	want := n.renderedTrace(t, userspaceArgs, pkt...)
	if want.Verdict != "dnat" || want.ProxyPort == "" || len(want.Endpoints) != 3 {
		t.Fatalf("the rendered userspace trace does not go through a proxy port: %+v", want)
	}
	portal := slices.IndexFunc(want.Path, func(s jsoncontract.Step) bool {
		return s.Chain == "KUBE-PORTALS-CONTAINER" && strings.HasSuffix(s.Rule, "-j REDIRECT --to-ports "+want.ProxyPort)
	})
	if portal < 0 {
		t.Fatalf("the rendered trace has no portal rule to proxy port %s: %+v", want.ProxyPort, want.Path)
	}
	got := n.liveVerdict(t, userspaceArgs, pkt...)
	if got.Verdict != want.Verdict || got.ProxyPort != want.ProxyPort ||
		!reflect.DeepEqual(got.Path, want.Path) || !reflect.DeepEqual(got.Endpoints, want.Endpoints) {
		t.Fatalf("the live trace after apply differs from the render:\nlive:     %+v\nrendered: %+v", got, want)
	}

	// The Service's portal rule, deleted from the kernel by hand.
	n.ipt("-t", "nat", "-D", "KUBE-PORTALS-CONTAINER", strconv.Itoa(n.ruleNumber("nat", "KUBE-PORTALS-CONTAINER", want.Path[portal].Rule)))
	got = n.liveVerdict(t, userspaceArgs, pkt...)
	if got.Verdict == "dnat" || got.ProxyPort != "" || len(got.Endpoints) != 0 ||
		slices.ContainsFunc(got.Path, func(s jsoncontract.Step) bool { return strings.Contains(s.Rule, "REDIRECT") }) {
		t.Fatalf("the live trace still goes through the deleted portal rule: %+v", got)
	}
	if again := n.renderedTrace(t, userspaceArgs, pkt...); !reflect.DeepEqual(again, want) {
		t.Fatalf("a hand edit of the kernel changed the rendered trace:\nbefore: %+v\nafter:  %+v", want, again)
	}
}

// ruleNumber is the 1-based position of rule (as iptables-save prints
// it, without "-A CHAIN ") in the node's chain, for iptables -D; it
// fails the test if the chain lacks it.
func (n *e2eNode) ruleNumber(table, chain, rule string) int {
	n.t.Helper()
	i := 0
	for line := range strings.Lines(n.save(table)) {
		spec, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-A "+chain+" ")
		if !ok {
			continue
		}
		i++
		if spec == rule {
			return i
		}
	}
	n.t.Fatalf("%s %s has no rule %q:\n%s", table, chain, rule, n.save(table))
	return 0
}
