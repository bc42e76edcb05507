package upstream

import (
	"fmt"
	"sort"
	"strings"
)

// Column is one proxy of the side-by-side table: the results file
// docs/conformance/results/NAME.tsv and its heading.
type Column struct {
	Name  string // SVCPROXY_E2E_PROXY's value and the file's name
	Title string
	// Mode is the proxy mode the column runs.
	Mode string
	// KubeProxy: the column is the real kube-proxy, a baseline.
	KubeProxy bool
	// Baseline, for a column of the tool, names the kube-proxy column of
	// the same mode, which it is held to: some tests skip themselves by
	// the mode the proxy reports (the localhost NodePort metric test
	// runs only in iptables mode), whichever proxy it is.
	Baseline string
}

// Columns are the table's columns: kube-proxy in its default mode and in
// nftables mode, then the tool in each.
var Columns = []Column{
	{Name: "kube-proxy", Title: "kube-proxy v1.37.2 (iptables)", Mode: "iptables", KubeProxy: true},
	{Name: "kube-proxy-nftables", Title: "kube-proxy v1.37.2 (nftables)", Mode: "nftables", KubeProxy: true},
	{Name: "iptables", Title: "kubectl-svcproxy iptables", Mode: "iptables", Baseline: "kube-proxy"},
	{Name: "nftables", Title: "kubectl-svcproxy nftables", Mode: "nftables", Baseline: "kube-proxy-nftables"},
}

// ColumnByName returns the column called name.
func ColumnByName(name string) (Column, bool) {
	for _, c := range Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// Table renders the generated part of docs/CONFORMANCE.md: the counts per
// column, the table of every selected test, the tests that did not pass
// with their reasons, and the skip list. runs holds one Run per column of
// Columns, in order; a column not yet run has an empty Run.
func Table(runs []Run) string {
	var b strings.Builder
	names := allNames(runs)
	b.WriteString("| | " + titles() + " |\n|---|" + strings.Repeat("---|", len(Columns)) + "\n")
	for _, row := range []struct {
		label string
		cell  func(Run) string
	}{
		{"passed", func(r Run) string { return count(r, Passed) }},
		{"failed", func(r Run) string { return count(r, Failed) }},
		{"skipped", func(r Run) string { return count(r, Skipped) }},
		{"suite run time (lab set-up not included)", func(r Run) string { return orDash(r.Get("duration")) }},
		{"parallel ginkgo processes", func(r Run) string { return orDash(r.Get("procs")) }},
		{"nodes", func(r Run) string { return orDash(r.Get("nodes")) }},
		{"date", func(r Run) string { return orDash(r.Get("date")) }},
	} {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = row.cell(r)
		}
		fmt.Fprintf(&b, "| %s | %s |\n", row.label, strings.Join(cells, " | "))
	}
	b.WriteString("\n#### Every selected test\n\n| test | " + titles() + " |\n|---|" + strings.Repeat("---|", len(Columns)) + "\n")
	for _, name := range names {
		cells := make([]string, len(runs))
		for i, r := range runs {
			cells[i] = cell(find(r, name))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", escape(name), strings.Join(cells, " | "))
	}
	writeNotPassed(&b, runs, names)
	writeSkipList(&b)
	return b.String()
}

// writeNotPassed lists, per test that failed or skipped itself in some
// column, each column's reason.
func writeNotPassed(b *strings.Builder, runs []Run, names []string) {
	b.WriteString("\n#### Why a test did not pass\n\n")
	b.WriteString("Tests of the skip list are left out here (see below).\n\n| test | proxy | result | reason |\n|---|---|---|---|\n")
	for _, name := range names {
		for i, r := range runs {
			res, ok := find(r, name)
			if !ok || res.State == Passed || strings.HasPrefix(res.Reason, "skip list: ") {
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", escape(name), Columns[i].Name, res.State, escape(res.Reason))
		}
	}
}

func writeSkipList(b *strings.Builder) {
	b.WriteString("\n#### The skip list\n\n| pattern | why |\n|---|---|\n")
	for _, s := range Skips {
		fmt.Fprintf(b, "| `%s` | %s |\n", s.Pattern, escape(s.Reason))
	}
}

func titles() string {
	t := make([]string, len(Columns))
	for i, c := range Columns {
		t[i] = c.Title
	}
	return strings.Join(t, " | ")
}

func allNames(runs []Run) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range runs {
		for _, res := range r.Results {
			if !seen[res.Name] {
				seen[res.Name] = true
				names = append(names, res.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

func find(r Run, name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

func cell(r Result, ok bool) string {
	switch {
	case !ok:
		return "–"
	case r.State == Passed:
		return fmt.Sprintf("pass (%.0f s)", r.Seconds)
	case r.State == Failed:
		return "**FAIL**"
	}
	return "skip"
}

func count(r Run, s State) string {
	if len(r.Results) == 0 {
		return "–"
	}
	n := 0
	for _, res := range r.Results {
		if res.State == s {
			n++
		}
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// escape keeps a cell in its column: a pipe ends a Markdown cell.
func escape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
