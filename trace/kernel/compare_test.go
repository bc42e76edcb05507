package kernel

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// TestCompareNamesTheCause: a disagreement says whether the proxy's rules
// differ from the trace, or whether they matched as predicted and
// routing (a bare namespace with no route to the endpoint) or another
// table ended the packet.
func TestCompareNamesTheCause(t *testing.T) {
	svc := trace.Step{Table: "ip kube-proxy", Chain: "services", Rule: "ip daddr 10.96.0.10 tcp dport 80 goto service-X"}
	sep := trace.Step{Table: "ip kube-proxy", Chain: "endpoint-A", Rule: "dnat to 10.244.0.5:8080"}
	other := trace.Step{Table: "ip kube-proxy", Chain: "services", Rule: "ip daddr 10.96.0.11 tcp dport 80 goto service-Y"}
	r := &trace.Result{Verdict: trace.DNAT, Path: []trace.Step{svc},
		Endpoints: []trace.Endpoint{{Address: "10.244.0.5:8080", Probability: 1, Path: []trace.Step{sep}}}}
	for _, tc := range []struct {
		name string
		o    Outcome
		want string
	}{
		{"agrees", Outcome{Verdict: trace.DNAT, Endpoint: "10.244.0.5:8080", Path: []trace.Step{svc, sep}}, ""},
		{"no route after the rules", Outcome{Lost: true, Path: []trace.Step{svc, sep}}, CauseRouting},
		{"another table after the rules", Outcome{DroppedElsewhere: "inet filter input handle 4", Path: []trace.Step{svc, sep}}, CauseOtherTable},
		{"lost after another rule", Outcome{Lost: true, Path: []trace.Step{other}}, CauseRules},
		{"another endpoint", Outcome{Verdict: trace.DNAT, Endpoint: "10.244.9.9:8080", Path: []trace.Step{svc}}, CauseRules},
	} {
		c := Compare(r, &tc.o)
		if c.Cause != tc.want || c.Agrees != (tc.want == "") {
			t.Errorf("%s: cause %q (agrees %v), want %q: %v", tc.name, c.Cause, c.Agrees, tc.want, c.Disagreements)
		}
		if tc.want == CauseRouting && !strings.Contains(c.Text(), "because of routing, not the proxy's rules") {
			t.Errorf("%s: the text does not say it is routing:\n%s", tc.name, c.Text())
		}
	}
}
