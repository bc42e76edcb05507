package traffic

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Loader programs lab.Node() with one proxy mode's rules for the snapshot,
// as that mode's proxy would on node1. It fails the test when it cannot.
type Loader func(t *testing.T, lab *netlab.Lab, snapshot *cluster.Snapshot)

// Mode is one proxy mode under test: its name (the key of
// Probe.ExpectIn) and its Loader.
type Mode struct {
	Name string
	Load Loader
	// Like names the mode whose ExpectIn a variant of it shares (the
	// compact nftables layout behaves as "nftables"); empty is Name.
	Like string
	// Evaluator, if set, gives the mode's ruleset for the snapshot as a
	// trace evaluator: every probe's real outcome is then checked against
	// what `kubectl svcproxy trace` predicts (see predict.go).
	Evaluator EvaluatorFunc
}

// Run builds a lab for the scenario (dual-stack if any pod or probe uses
// IPv6), starts the pods and their backends, calls load, and then runs each
// probe, in order, as a subtest of t. It skips where netlab cannot run.
func Run(t *testing.T, sc Scenario, mode Mode) {
	t.Helper()
	snap, err := cluster.Decode(sc.Name+".yaml", []byte(sc.Snapshot))
	if err != nil {
		t.Fatalf("scenario %s: %v", sc.Name, err)
	}
	var opts []netlab.Option
	if sc.usesIPv6() {
		opts = append(opts, netlab.WithIPv6())
	}
	lab := netlab.New(t, opts...)
	sources := map[string]netlab.NS{
		FromClient:  lab.Client(),
		FromClient2: lab.Client2(),
		FromNode:    lab.Node(),
	}
	for _, ps := range sc.Pods {
		sources[ps.Name] = startPod(t, lab, ps).NS()
	}
	mode.Load(t, lab, snap)
	pred := newPredictor(t, mode, snap, sc)
	for _, pr := range sc.Probes {
		like := mode.Name
		if mode.Like != "" {
			like = mode.Like
		}
		if e, ok := pr.ExpectIn[like]; ok {
			pr.Expect = e
		}
		t.Run(pr.Name, func(t *testing.T) {
			from, ok := sources[pr.From]
			if !ok {
				t.Fatalf("probe %q: unknown source %q (want %s, %s, %s or a pod's name)",
					pr.Name, pr.From, FromClient, FromClient2, FromNode)
			}
			got := check(t.Context(), t, lab, from, pr)
			pred.compare(t, pr, got)
		})
	}
}

// startPod adds the pod to the lab and starts its backends.
func startPod(t *testing.T, lab *netlab.Lab, ps PodSpec) *netlab.Pod {
	t.Helper()
	p := lab.AddPod(ps.Name, ps.IPs...)
	for _, port := range ps.TCP {
		if err := p.ServeTCP(port); err != nil {
			t.Fatalf("pod %s: %v", ps.Name, err)
		}
	}
	for _, port := range ps.UDP {
		if err := p.ServeUDP(port); err != nil {
			t.Fatalf("pod %s: %v", ps.Name, err)
		}
	}
	return p
}

// check runs one probe's connections from ns, judges them, and returns
// what they did.
func check(ctx context.Context, t *testing.T, lab *netlab.Lab, ns netlab.NS, pr Probe) observed {
	t.Helper()
	switch pr.Expect.Outcome {
	case Answered:
		counts := checkAnswers(ctx, t, ns, pr)
		return observed{outcome: Answered, backends: slices.Sorted(maps.Keys(counts))}
	case Dropped:
		checkDropped(ctx, t, lab, ns, pr)
	default:
		checkFailure(ctx, t, ns, pr)
	}
	t.Logf("%s: %s", describe(pr), pr.Expect.Outcome)
	return observed{outcome: pr.Expect.Outcome}
}

// checkDropped is checkFailure for Dropped, which also makes sure that the
// node dropped the packets rather than routing them on untouched (see
// leakWatch).
func checkDropped(ctx context.Context, t *testing.T, lab *netlab.Lab, ns netlab.NS, pr Probe) {
	t.Helper()
	w, err := watchLeaks(lab.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	checkFailure(ctx, t, ns, pr)
	n, err := w.leaked(pr.Proto, pr.Dst)
	switch {
	case err != nil:
		t.Fatal(err)
	case n > 0:
		t.Fatalf("%s: no answer, but the node did not drop it: it routed %d packet(s) to %s on, untranslated, through its default route (no rule claimed them); want %s",
			describe(pr), n, pr.Dst, pr.Expect)
	}
}

// checkAnswers opens connections until every expected backend has answered
// (or, for Sticky, N of them), failing at the first connection that fails,
// reaches a backend that must not answer, or shows the wrong source.
func checkAnswers(ctx context.Context, t *testing.T, ns netlab.NS, pr Probe) map[string]int {
	t.Helper()
	e := pr.Expect
	what := describe(pr)
	minN, maxN := e.attempts()
	counts := map[string]int{}
	n := 0
	for ; n < maxN; n++ {
		if n >= minN && (e.Sticky || len(missing(counts, e.Backends)) == 0) {
			break
		}
		r, err := ns.Probe(ctx, pr.Proto, netip.Addr{}, pr.Dst, answerTimeout)
		if err != nil {
			t.Fatalf("%s: connection %d %s: %v\nanswers so far: %s; want %s",
				what, n+1, classify(err), err, formatCounts(counts), e)
		}
		counts[r.Backend]++
		switch {
		case !e.allows(r.Backend):
			t.Fatalf("%s: connection %d answered by %s, which must never answer\nanswers so far: %s; want %s",
				what, n+1, r.Backend, formatCounts(counts), e)
		case pr.SourceIs.IsValid() && r.Source.Addr() != pr.SourceIs:
			t.Fatalf("%s: %s saw the connection come from %s; want from %s (%s)",
				what, r.Backend, r.Source.Addr(), pr.SourceIs, sourceHint(pr.SourceIs, r.Source.Addr()))
		case e.Sticky && len(counts) > 1:
			t.Fatalf("%s: not sticky: connection %d answered by %s\nanswers so far: %s; want %s",
				what, n+1, r.Backend, formatCounts(counts), e)
		}
	}
	if !e.Sticky {
		if m := missing(counts, e.Backends); len(m) > 0 {
			t.Fatalf("%s: %s never answered in %d connections\nanswers: %s; want %s",
				what, strings.Join(m, ", "), n, formatCounts(counts), e)
		}
	}
	t.Logf("%s: %s", what, formatCounts(counts))
	return counts
}

// checkFailure expects each of the probe's connections to be refused or
// to stay unanswered.
func checkFailure(ctx context.Context, t *testing.T, ns netlab.NS, pr Probe) {
	t.Helper()
	e := pr.Expect
	what := describe(pr)
	timeout := answerTimeout
	if e.Outcome == Dropped {
		timeout = silenceTimeout
	}
	n, _ := e.attempts()
	for i := range n {
		r, err := ns.Probe(ctx, pr.Proto, netip.Addr{}, pr.Dst, timeout)
		switch {
		case err == nil:
			t.Fatalf("%s: connection %d answered by %s (which saw source %s); want %s",
				what, i+1, r.Backend, r.Source.Addr(), e)
		case e.Outcome == Refused && !netlab.IsRefused(err),
			e.Outcome == Dropped && !netlab.IsTimeout(err):
			t.Fatalf("%s: connection %d %s: %v; want %s", what, i+1, classify(err), err, e)
		}
	}
}

// describe names a probe in failure messages: "client → 10.96.0.10:80 tcp".
func describe(pr Probe) string {
	return fmt.Sprintf("%s → %s %s", pr.From, pr.Dst, pr.Proto)
}

// String says what an Expectation wants, for failure messages.
func (e Expectation) String() string {
	switch {
	case e.Outcome != Answered:
		return e.Outcome.String()
	case e.Sticky:
		return "every answer from one of {" + strings.Join(e.Backends, ", ") + "}"
	}
	return "answers from exactly {" + strings.Join(e.Backends, ", ") + "}"
}

// classify names what happened to a failed connection.
func classify(err error) string {
	switch {
	case netlab.IsRefused(err):
		return "was refused"
	case netlab.IsTimeout(err):
		return "timed out"
	case netlab.IsUnreachable(err):
		return "was unreachable"
	}
	return "failed"
}

// sourceHint explains a wrong source address in masquerade terms.
func sourceHint(want, got netip.Addr) string {
	switch {
	case got == netlab.NodeIP || got == netlab.NodeIPv6:
		return "the connection was masqueraded to the node IP"
	case want == netlab.NodeIP || want == netlab.NodeIPv6:
		return "the connection was not masqueraded"
	}
	return "unexpected source NAT"
}

// missing lists the backends that have not answered yet.
func missing(counts map[string]int, backends []string) []string {
	var out []string
	for _, b := range backends {
		if counts[b] == 0 {
			out = append(out, b)
		}
	}
	return out
}

// formatCounts is "pod-a×7 pod-b×13", sorted by name, or "none".
func formatCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s×%d", name, counts[name]))
	}
	return strings.Join(parts, " ")
}
