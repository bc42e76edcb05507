package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// Check is the kernel's trace of the probe held against the evaluator's:
// the `kernel` field of `trace --live --kernel -o json`.
type Check struct {
	// Agrees is set when the kernel matched the rules the trace predicted
	// for the branch the kernel took, and ended the packet the same way.
	Agrees bool `json:"agrees"`
	// SourcePort is the probe's source port.
	SourcePort uint16 `json:"sourcePort"`
	// Verdict is the kernel's: dnat, accept, drop or reject; empty when
	// the packet vanished outside the proxy's rules (Note says so).
	Verdict trace.Verdict `json:"verdict,omitempty"`
	// Endpoint is where the kernel sent the packet, for dnat.
	Endpoint string `json:"endpoint,omitempty"`
	// Masquerade is set when the packet left with another source.
	Masquerade bool `json:"masquerade"`
	// Path is the proxy's rules the kernel matched, in order.
	Path []trace.Step `json:"path"`
	// Disagreements say each way the kernel and the trace differ.
	Disagreements []string `json:"disagreements,omitempty"`
	// Note explains a packet that vanished outside the proxy's rules.
	Note string `json:"note,omitempty"`
	// Cause says where a disagreement lies: "rules" (the proxy's rules did
	// not do what the trace says), "routing" (they did, then routing or
	// the reverse-path filter ended the packet, as in a namespace without
	// routes to the endpoints) or "other-table" (a rule outside the mode's
	// tables dropped it). Empty when the check agrees.
	Cause string `json:"cause,omitempty"`
}

// The causes of a disagreement.
const (
	CauseRules      = "rules"
	CauseRouting    = "routing"
	CauseOtherTable = "other-table"
)

// Compare holds the kernel's outcome against the evaluator's result.
func Compare(r *trace.Result, o *Outcome) *Check {
	c := &Check{Verdict: o.Verdict, Endpoint: o.Endpoint, Masquerade: o.Masquerade, Path: o.Path}
	if c.Path == nil {
		c.Path = []trace.Step{}
	}
	want, masq := r.Path, r.Masquerade
	switch {
	case o.DroppedElsewhere != "":
		c.Note = "the packet was dropped by " + o.DroppedElsewhere + ", a rule outside this mode's tables"
		c.differ("the trace predicts %s; in the kernel %s", r.Verdict, c.Note)
	case o.Lost:
		c.Note = "the packet neither left the node nor reached its sockets, and no rule dropped it: routing or the reverse-path filter did"
		c.differ("the trace predicts %s; in the kernel %s", r.Verdict, c.Note)
	case r.Verdict != o.Verdict:
		c.differ("the trace predicts %s, the kernel's verdict is %s", r.Verdict, o.Verdict)
	}
	if r.Verdict == trace.DNAT && o.Verdict == trace.DNAT {
		i := slices.IndexFunc(r.Endpoints, func(e trace.Endpoint) bool { return e.Address == o.Endpoint })
		if i < 0 {
			c.differ("the kernel sent the packet to %s, not one of the predicted endpoints", o.Endpoint)
		} else {
			want, masq = slices.Concat(r.Path, r.Endpoints[i].Path), r.Endpoints[i].Masquerade
		}
	}
	// A packet that routing or another table ended after the DNAT has
	// met one endpoint's rules: hold it against that branch.
	ended := o.Lost || o.DroppedElsewhere != ""
	if ended && r.Verdict == trace.DNAT {
		for _, ep := range r.Endpoints {
			if branch := slices.Concat(r.Path, ep.Path); isPrefix(o.Path, branch) {
				want = branch
				break
			}
		}
	}
	if !ended && masq != o.Masquerade {
		c.differ("the trace predicts masquerade %v, the kernel's was %v", masq, o.Masquerade)
	}
	if (o.Verdict == trace.Drop || o.Verdict == trace.Reject) && r.DecidedBy != nil && *r.DecidedBy != *o.DecidedBy {
		c.differ("the trace says %s decided, the kernel says %s", stepText(*r.DecidedBy), stepText(*o.DecidedBy))
	}
	before := len(c.Disagreements)
	c.comparePath(want, o.Path, ended)
	pathAgrees := len(c.Disagreements) == before
	c.Agrees = len(c.Disagreements) == 0
	switch {
	case c.Agrees:
	case o.DroppedElsewhere != "" && pathAgrees:
		c.Cause = CauseOtherTable
	case o.Lost && pathAgrees:
		c.Cause = CauseRouting
	default:
		c.Cause = CauseRules
	}
	return c
}

// comparePath reports the first rule where the paths part; the path of a
// packet that something outside the rules ended (its verdict already
// differs) need only be a beginning of the predicted one.
func (c *Check) comparePath(want, got []trace.Step, lost bool) {
	n := min(len(want), len(got))
	for i := range n {
		if want[i] != got[i] {
			c.differ("rule %d of the path: the trace matched %s, the kernel %s", i+1, stepText(want[i]), stepText(got[i]))
			return
		}
	}
	switch {
	case len(got) > n:
		c.differ("the kernel matched %d more rule(s) than the trace, from %s", len(got)-n, stepText(got[n]))
	case len(want) > n && !lost:
		c.differ("the trace matched %d more rule(s) than the kernel, from %s", len(want)-n, stepText(want[n]))
	}
}

// isPrefix reports whether got is a beginning of want.
func isPrefix(got, want []trace.Step) bool {
	return len(got) <= len(want) && slices.Equal(got, want[:len(got)])
}

func (c *Check) differ(format string, args ...any) {
	c.Disagreements = append(c.Disagreements, fmt.Sprintf(format, args...))
}

func stepText(s trace.Step) string {
	return strings.TrimSpace(s.Table+" "+s.Chain) + ": " + s.Rule
}
