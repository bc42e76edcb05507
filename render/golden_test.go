package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/goldencase"
)

// goldenCase is one golden scenario (test/goldencase) with render's
// methods on it.
type goldenCase struct{ *goldencase.Case }

func loadGoldenCases(t *testing.T) []*goldenCase {
	var out []*goldenCase
	for _, c := range goldencase.Load(t, filepath.Join("..", "testdata", "golden")) {
		out = append(out, &goldenCase{c})
	}
	return out
}

// renderIPTables renders every family of the case as iptables-save text.
func (gc *goldenCase) renderIPTables(t *testing.T, input []byte) ([]*ipt.Ruleset, string) {
	return iptablesGolden.renderCase(t, gc, input)
}

// section returns the named section of the archive, or "" and false.
func (gc *goldenCase) section(name string) (string, bool) {
	for _, f := range gc.Archive.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// check compares got with the named section, or rewrites it with -update.
func (gc *goldenCase) check(t *testing.T, name, got string) {
	t.Helper()
	if *golden.Update {
		i := slices.IndexFunc(gc.Archive.Files, func(f txtar.File) bool { return f.Name == name })
		if i < 0 {
			gc.Archive.Files = append(gc.Archive.Files, txtar.File{Name: name})
			i = len(gc.Archive.Files) - 1
		}
		gc.Archive.Files[i].Data = []byte(got)
		if err := os.WriteFile(gc.Path, txtar.Format(gc.Archive), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := gc.section(name)
	if !ok {
		t.Fatalf("%s: no %q section; run go test ./render -update", gc.Path, name)
	}
	if want != got {
		t.Errorf("%s: %s differs from the golden file (-want +got):\n%s", gc.Path, name, cmp.Diff(want, got))
	}
}

// reverseDocuments reverses the order of the "---"-separated YAML documents.
func reverseDocuments(in []byte) []byte {
	docs := bytes.Split(in, []byte("\n---\n"))
	slices.Reverse(docs)
	return bytes.Join(docs, []byte("\n---\n"))
}
