package upstream

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Merge completes a run's results against the selection: listed is every
// test of the suite that the run's focus selects (`e2e.test
// --list-tests`). A listed test that the skip list names is skipped with
// the list's reason; one the report lacks did not run, which is a
// failure (the run was cut short).
func Merge(listed []string, reported []Result) []Result {
	byName := map[string]Result{}
	for _, r := range reported {
		// Specs may share a name (the JUnit writer orders them by start
		// time): the worst result stands for the name.
		if prev, ok := byName[r.Name]; !ok || rank(r.State) > rank(prev.State) {
			byName[r.Name] = r
		}
	}
	out := make([]Result, 0, len(listed))
	for _, name := range listed {
		r, ok := byName[name]
		switch {
		case ok:
		case skipReason(name) != "":
			r = Result{Name: name, State: Skipped, Reason: "skip list: " + skipReason(name)}
		default:
			r = Result{Name: name, State: Failed, Reason: "not in the report: the run ended before it"}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rank orders states from best to worst.
func rank(s State) int {
	switch s {
	case Passed:
		return 0
	case Skipped:
		return 1
	}
	return 2
}

// listLine is a line of `e2e.test --list-tests`: "    FILE:LINE: NAME".
var listLine = regexp.MustCompile(`^\s+\S+\.go:\d+: (.+)$`)

// ReadList reads `e2e.test --list-tests` and returns the names that focus
// selects, sorted and without repeats (a table-driven test lists once per
// entry under one name).
func ReadList(r io.Reader, focus *regexp.Regexp) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := listLine.FindStringSubmatch(sc.Text())
		if m == nil || !focus.MatchString(m[1]) || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		names = append(names, m[1])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Run is one column's results file: how the run went, then its results.
type Run struct {
	// Meta holds "# key: value" lines: the proxy, the duration, the
	// parallelism and the nodes of the run.
	Meta    [][2]string
	Results []Result
}

// Get returns the value of a Meta key, or "".
func (r Run) Get(key string) string {
	for _, kv := range r.Meta {
		if kv[0] == key {
			return kv[1]
		}
	}
	return ""
}

// WriteRun writes run as a results file: its Meta as "# key: value"
// lines, then one line per test, its state, seconds, name and reason,
// tab-separated.
func WriteRun(w io.Writer, run Run) error {
	bw := bufio.NewWriter(w)
	for _, kv := range run.Meta {
		fmt.Fprintf(bw, "# %s: %s\n", kv[0], kv[1])
	}
	for _, r := range run.Results {
		fmt.Fprintf(bw, "%s\t%.1f\t%s\t%s\n", r.State, r.Seconds, r.Name, r.Reason)
	}
	return bw.Flush()
}

// ReadRun reads what WriteRun wrote.
func ReadRun(r io.Reader) (Run, error) {
	var run Run
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		if meta, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			k, v, _ := strings.Cut(meta, ": ")
			run.Meta = append(run.Meta, [2]string{k, v})
			continue
		}
		f := strings.SplitN(sc.Text(), "\t", 4)
		if len(f) != 4 {
			return run, fmt.Errorf("line %d: want 4 tab-separated fields, got %d", n, len(f))
		}
		secs, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return run, fmt.Errorf("line %d: seconds: %w", n, err)
		}
		st := State(f[0])
		if st != Passed && st != Failed && st != Skipped {
			return run, fmt.Errorf("line %d: state %q", n, f[0])
		}
		run.Results = append(run.Results, Result{State: st, Seconds: secs, Name: f[2], Reason: f[3]})
	}
	return run, sc.Err()
}

// Regressions returns the tests that passed in baseline and did not pass
// in results, with their state and reason: what the aim forbids.
func Regressions(baseline, results []Result) []string {
	got := map[string]Result{}
	for _, r := range results {
		got[r.Name] = r
	}
	var out []string
	for _, b := range baseline {
		if b.State != Passed {
			continue
		}
		r, ok := got[b.Name]
		if !ok {
			continue // not selected in this run (CI's subset)
		}
		if r.State != Passed {
			out = append(out, fmt.Sprintf("%s: %s (%s)", b.Name, r.State, r.Reason))
		}
	}
	return out
}
