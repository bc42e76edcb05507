package conformance

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// Result is the outcome of one check of one scenario.
type Result struct {
	Scenario string
	Check    Check
	// Skipped says why the check did not run; empty when it ran.
	Skipped string
	// Err is a failure to run the check at all.
	Err error
	// Diff holds every differing line (see LineDiff), or for a plan the
	// changed lines of its output.
	Diff []string
	// Unexplained are the lines of Diff no allow-list entry explains.
	Unexplained []string
	// Allowed maps each used allow-list entry to how many lines it explained.
	Allowed map[*AllowEntry]int
}

// Explain sorts the result's Diff into allowed and unexplained lines.
func (r *Result) Explain(l *AllowList) {
	r.Unexplained = nil
	r.Allowed = map[*AllowEntry]int{}
	present := map[string]bool{}
	for _, line := range r.Diff {
		present[line] = true
	}
	for _, line := range r.Diff {
		if e := l.Match(r.Scenario, r.Check, line, present[otherSign(line)]); e != nil {
			r.Allowed[e]++
			continue
		}
		r.Unexplained = append(r.Unexplained, line)
	}
}

// otherSign returns line with its first character, the sign, flipped.
func otherSign(line string) string {
	switch {
	case strings.HasPrefix(line, OnlyKubeProxy):
		return OnlyTool + line[1:]
	case strings.HasPrefix(line, OnlyTool):
		return OnlyKubeProxy + line[1:]
	}
	return line
}

// Failed reports whether the result must fail the test.
func (r *Result) Failed() bool { return r.Err != nil || len(r.Unexplained) > 0 }

// cell is the result in the report table.
func (r *Result) cell() string {
	switch {
	case r.Skipped != "":
		return "skipped"
	case r.Err != nil:
		return "ERROR"
	case len(r.Unexplained) > 0:
		return fmt.Sprintf("DIFF (%d lines)", len(r.Unexplained))
	case len(r.Diff) > 0:
		return fmt.Sprintf("equal, %d allowed", len(r.Diff))
	}
	return "equal"
}

// Report collects results from parallel subtests.
type Report struct {
	mu      sync.Mutex
	results []*Result
}

// Add records a result.
func (rp *Report) Add(r *Result) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.results = append(rp.results, r)
}

// Results returns the results in scenario, then check order.
func (rp *Report) Results() []*Result {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	out := slices.Clone(rp.results)
	slices.SortStableFunc(out, func(a, b *Result) int {
		if c := strings.Compare(a.Scenario, b.Scenario); c != 0 {
			return c
		}
		return slices.Index(checkOrder, a.Check) - slices.Index(checkOrder, b.Check)
	})
	return out
}

var checkOrder = []Check{CheckRules(IPTables), CheckRules(NFTables), CheckRules(IPVS),
	CheckPlan(IPTables), CheckPlan(NFTables), CheckPlan(IPVS)}

// usedChecks are the checks of checkOrder that have a result: the host
// run has no ipvs column, the VM run only ipvs ones.
func usedChecks(results []*Result) []Check {
	var out []Check
	for _, c := range checkOrder {
		if slices.ContainsFunc(results, func(r *Result) bool { return r.Check == c }) {
			out = append(out, c)
		}
	}
	return out
}

// Table prints scenario × check, then for every check that failed or was
// skipped, why: the error, the skip reason, or the first differing lines.
func (rp *Report) Table(firstLines int) string {
	results := rp.Results()
	cells := map[string]map[Check]*Result{}
	var scenarios []string
	for _, r := range results {
		if cells[r.Scenario] == nil {
			cells[r.Scenario] = map[Check]*Result{}
			scenarios = append(scenarios, r.Scenario)
		}
		cells[r.Scenario][r.Check] = r
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	checks := usedChecks(results)
	fmt.Fprintf(tw, "scenario\t%s\n", joinChecks(checks))
	for _, s := range scenarios {
		row := []string{s}
		for _, c := range checks {
			if r := cells[s][c]; r != nil {
				row = append(row, r.cell())
			} else {
				row = append(row, "-")
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	for _, r := range results {
		r.details(&b, firstLines)
	}
	return b.String()
}

func joinChecks(cs []Check) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return strings.Join(s, "\t")
}

// details writes why a check is not plainly equal.
func (r *Result) details(b *strings.Builder, firstLines int) {
	head := fmt.Sprintf("\n%s / %s: ", r.Scenario, r.Check)
	switch {
	case r.Skipped != "":
		b.WriteString(head + "skipped: " + r.Skipped + "\n")
	case r.Err != nil:
		b.WriteString(head + "error: " + r.Err.Error() + "\n")
	case len(r.Unexplained) > 0:
		b.WriteString(head + "first differing lines (- kube-proxy only, + kubectl-svcproxy only):\n")
		for i, l := range r.Unexplained {
			if i == firstLines {
				fmt.Fprintf(b, "    ... %d more\n", len(r.Unexplained)-i)
				break
			}
			b.WriteString("    " + l + "\n")
		}
	}
	entries := make([]*AllowEntry, 0, len(r.Allowed))
	for e := range r.Allowed {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *AllowEntry) int { return strings.Compare(a.Reason, b.Reason) })
	for _, e := range entries {
		fmt.Fprintf(b, "%s%d line(s) allowed: %s\n", head, r.Allowed[e], e.Reason)
	}
}
