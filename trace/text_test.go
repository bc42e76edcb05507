package trace

import (
	"fmt"
	"strings"
	"testing"
)

// TestTextPrintsTheSharedTailOnce: the rules every endpoint's branch meets
// at its end are printed once, after the endpoints, and each endpoint keeps
// the rules only it meets; a branch that ends differently keeps its own.
func TestTextPrintsTheSharedTailOnce(t *testing.T) {
	forward := Step{Table: "filter", Chain: "FORWARD", Rule: "-j KUBE-FORWARD"}
	post := Step{Table: "nat", Chain: "POSTROUTING", Rule: "-j KUBE-POSTROUTING"}
	masq := Step{Table: "nat", Chain: "KUBE-POSTROUTING", Rule: "-j MASQUERADE"}
	var eps []Endpoint
	for i := range 10 {
		sep := Step{Table: "nat", Chain: fmt.Sprintf("KUBE-SEP-%d", i), Rule: fmt.Sprintf("-j DNAT --to-destination 10.0.0.%d:80", i)}
		eps = append(eps, Endpoint{Address: fmt.Sprintf("10.0.0.%d:80", i), Probability: 0.1, Path: []Step{sep, forward, post}})
	}
	r := &Result{Mode: "iptables", Verdict: DNAT, Endpoints: eps}
	text := r.Text()
	if n := strings.Count(text, forward.Rule); n != 1 {
		t.Errorf("the shared FORWARD rule is printed %d times, want once:\n%s", n, text)
	}
	if !strings.Contains(text, "  then, after every endpoint:\n      filter FORWARD: -j KUBE-FORWARD\n      nat POSTROUTING: -j KUBE-POSTROUTING\n") {
		t.Errorf("no shared tail after the endpoints:\n%s", text)
	}
	for i := range 10 {
		if !strings.Contains(text, fmt.Sprintf("      nat KUBE-SEP-%d: -j DNAT --to-destination 10.0.0.%d:80\n", i, i)) {
			t.Errorf("endpoint %d lost its own rule:\n%s", i, text)
		}
	}

	// One branch is masqueraded: the shared tail stops before the step
	// where the branches differ.
	eps[3].Path = append(eps[3].Path, masq)
	text = r.Text()
	if strings.Contains(text, "then, after every endpoint") || strings.Count(text, forward.Rule) != 10 {
		t.Errorf("branches that end differently were merged:\n%s", text)
	}
}
