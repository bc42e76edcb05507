package conformance

import (
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Only-in markers start every differing line.
const (
	OnlyKubeProxy = "-" // the line is in kube-proxy's rules only
	OnlyTool      = "+" // the line is in kubectl-svcproxy's rules only
)

// LineDiff returns the lines of a minimal line diff between kube-proxy's
// canonical rules and the tool's, in order, each prefixed with
// OnlyKubeProxy or OnlyTool. Equal inputs give nil.
func LineDiff(kubeProxy, tool Canonical) []string {
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToRunes(kubeProxy.String(), tool.String())
	diffs := dmp.DiffMainRunes(a, b, false)
	diffs = dmp.DiffCharsToLines(diffs, lines)
	var out []string
	for _, d := range diffs {
		var mark string
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			mark = OnlyKubeProxy
		case diffmatchpatch.DiffInsert:
			mark = OnlyTool
		default:
			continue
		}
		for _, l := range strings.Split(strings.TrimSuffix(d.Text, "\n"), "\n") {
			out = append(out, mark+" "+l)
		}
	}
	return out
}
