package iptables_test

import (
	"context"
	"strings"
	"testing"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// A foreign rule may hold anything iptables accepts, a newline in its
// comment included, which iptables-save prints across two lines. It must
// neither stop plan and apply nor be touched by them.
func TestForeignRuleWithANewlineIsLeftAlone(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			bin := "iptables-" + string(b)
			if out, err := n.lab.Node().Run(context.Background(), bin, "-A", "INPUT", "-m", "comment", "--comment", "foreign\nrule", "-j", "ACCEPT"); err != nil {
				t.Fatalf("add the foreign rule: %v\n%s", err, out)
			}
			want := ipt.Rule("-m comment --comment \"foreign\nrule\" -j ACCEPT")
			n.apply(t, snapshot(web("10.244.0.11")))
			n.assertNoChanges(t, snapshot(web("10.244.0.11")))
			input := n.read(t).Table(ipt.Filter).Chain("INPUT")
			if input == nil || !contains(input.Rules, want) {
				t.Fatalf("the foreign rule is gone or changed: %q", input)
			}
		})
	}
}

// A comment longer than the kernel keeps is rendered cut to the same
// length, so that the rule the kernel gives back equals the rendered one
// and a second plan finds nothing to change.
func TestLongCommentsMatchWhatTheKernelKeeps(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			desired := renderIPv4(t, snapshot(web("10.244.0.11")))
			long := ipt.NewBuilder().Comment(strings.Repeat("x", 300)).Jump("RETURN").Rule()
			if got := strings.Count(string(long), "x"); got != ipt.CommentMaxLen {
				t.Fatalf("comment of %d bytes rendered, want %d", got, ipt.CommentMaxLen)
			}
			svc := desired.Table(ipt.NAT).Chain("KUBE-SERVICES")
			svc.Rules = append([]ipt.Rule{long}, svc.Rules...)
			for i := 0; i < 2; i++ {
				plans, err := n.client.Plan(context.Background(), []*ipt.Ruleset{desired})
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && !plans[0].Changes.Empty() {
					t.Fatalf("the long comment plans as a change after apply: %+v", plans[0].Changes.Changes)
				}
				if err := n.client.Apply(context.Background(), plans); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Defence in depth: whatever the renderer is given, a rule that would end
// its restore line early is refused before anything is written.
func TestRulesThatBreakTheirLineAreRefused(t *testing.T) {
	n := newNode(t, backends[0])
	desired := renderIPv4(t, snapshot(web("10.244.0.11")))
	svc := desired.Table(ipt.NAT).Chain("KUBE-SERVICES")
	svc.Rules = append(svc.Rules, "-m comment --comment \"x\"\n-A PREROUTING -s 10.66.66.66/32 -j ACCEPT")
	before := len(n.rec.restores)
	_, err := n.client.Plan(context.Background(), []*ipt.Ruleset{desired})
	if err == nil || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("Plan = %v, want a refusal naming the control character", err)
	}
	if len(n.rec.restores) != before {
		t.Fatal("something was restored")
	}
	if pre := n.read(t).Table(ipt.NAT).Chain("PREROUTING"); pre != nil && len(pre.Rules) > 0 {
		t.Fatalf("PREROUTING holds %q", pre.Rules)
	}
}
