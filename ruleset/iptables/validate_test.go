package iptables

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func TestParseQuotedNewline(t *testing.T) {
	in := "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m comment --comment \"foreign\nrule \\\"quoted\\\"\" -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n"
	rs, err := Parse([]byte(in), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	got := rs.Table(Filter).Chain("INPUT").Rules
	want := []Rule{"-m comment --comment \"foreign\nrule \\\"quoted\\\"\" -j ACCEPT", "-j DROP"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rules = %q, want %q", got, want)
	}
	if target := got[0].Target(); target != "ACCEPT" {
		t.Errorf("target = %q", target)
	}
	if err := ValidateRule(got[0]); err == nil {
		t.Error("a rule with a newline validates")
	}
}

func TestValidate(t *testing.T) {
	for _, name := range []string{"", strings.Repeat("K", 29), "-X", "A B", "A\"B", "A\nB"} {
		if ValidateChainName(name) == nil {
			t.Errorf("chain name %q validates", name)
		}
	}
	if err := ValidateChainName(strings.Repeat("K", 28)); err != nil {
		t.Error(err)
	}
	for _, r := range []Rule{"-j A\n-A INPUT -j ACCEPT", "-m comment --comment \"a\rb\" -j X", "-j X\x00"} {
		if ValidateRule(r) == nil {
			t.Errorf("rule %q validates", r)
		}
	}
	rs := &Ruleset{Family: nodetable.IPv4, Tables: []*Table{{Name: NAT}}}
	rs.Tables[0].AddChain(&Chain{Name: "KUBE-X", Policy: "-", Rules: []Rule{`-m comment --comment "a b" -j RETURN`}})
	if err := rs.Validate(); err != nil {
		t.Error(err)
	}
	rs.Tables[0].Chains[0].Rules = append(rs.Tables[0].Chains[0].Rules, "-j X\n")
	if err := rs.Validate(); err == nil || !strings.Contains(err.Error(), "chain KUBE-X") {
		t.Errorf("Validate = %v, want the chain named", err)
	}
}

func TestCommentIsCutToWhatTheKernelKeeps(t *testing.T) {
	r := NewBuilder().Comment(strings.Repeat("y", 400)).Jump("RETURN").Rule()
	if n := strings.Count(string(r), "y"); n != CommentMaxLen {
		t.Errorf("%d bytes of comment, want %d", n, CommentMaxLen)
	}
}
