package review

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
)

// Section is one plan of a Markdown report: one node's, or one group's.
type Section struct {
	// Title names the nodes: "node node1", "nodes a, b, c (3)".
	Title    string
	Summary  diff.Summary
	Empty    bool
	Services []ServiceChange
	// Diff is the plan's text, the unified diff in the mode's syntax.
	Diff string
}

// Markdown writes a report fit for a pull-request comment: a heading,
// then for each section its summary line, a table of the Services it
// changes and the diff in a fenced block of at most maxLines lines (0: no
// bound), saying how many lines were left out.
func Markdown(w io.Writer, heading string, sections []Section, maxLines int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n", heading)
	for _, s := range sections {
		writeSection(&b, s, maxLines)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSection(b *strings.Builder, s Section, maxLines int) {
	if s.Empty {
		fmt.Fprintf(b, "\n**%s**: no changes.\n", s.Title)
		return
	}
	fmt.Fprintf(b, "\n**%s**: %s\n", s.Title, s.Summary)
	if len(s.Services) > 0 {
		b.WriteString("\n| Service | change | its rules |\n|---|---|---|\n")
		for _, c := range s.Services {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", c.Service, c.Change, Counts(c.Summary))
		}
	}
	lines := strings.SplitAfter(strings.TrimSuffix(s.Diff, "\n"), "\n")
	cut := 0
	if maxLines > 0 && len(lines) > maxLines {
		cut = len(lines) - maxLines
		lines = lines[:maxLines]
	}
	body := strings.Join(lines, "")
	fence := fenceFor(body)
	fmt.Fprintf(b, "\n%sdiff\n%s\n%s\n", fence, strings.TrimSuffix(body, "\n"), fence)
	if cut > 0 {
		fmt.Fprintf(b, "\n%d more lines of the diff were left out (%d in all).\n", cut, cut+maxLines)
	}
}

// fenceFor returns a code fence longer than any run of backticks in text,
// so that no line of the diff can close the block.
func fenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Counts spells the non-zero counts of a summary briefly: "rules +3 -1,
// elements +2"; "none" when there are none (a change that renders the
// same rules, such as a label).
func Counts(s diff.Summary) string {
	var parts []string
	add := func(what string, plus, minus int) {
		if plus+minus > 0 {
			parts = append(parts, fmt.Sprintf("%s +%d -%d", what, plus, minus))
		}
	}
	add("rules", s.RulesAdded, s.RulesRemoved)
	add("elements", s.ElementsAdded, s.ElementsRemoved)
	add("virtual servers", s.ServicesAdded, s.ServicesDeleted)
	add("real servers", s.DestinationsAdded, s.DestinationsDeleted)
	add("addresses", s.AddressesAdded, s.AddressesRemoved)
	if n := s.ServicesChanged + s.DestinationsChanged; n > 0 {
		parts = append(parts, fmt.Sprintf("%d changed in place", n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
