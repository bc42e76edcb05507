package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
)

// againstGolden are the outputs of plan --against for the embedded
// example against testdata/golden/review/example-old.yaml (the example
// before a change), by the name of their file in example.txtar.
var againstGolden = []struct {
	file string
	args []string
}{
	{"iptables.diff", nil},
	{"nftables.diff", []string{"--mode=nftables"}},
	{"ipvs.diff", []string{"--mode=ipvs"}},
	{"userspace.diff", []string{"--mode=userspace"}},
	{"iptables.md", []string{"-o", "markdown"}},
	{"nftables.md", []string{"--mode=nftables", "-o", "markdown"}},
	{"all-nodes.txt", []string{"--all-nodes", "--mode=nftables"}},
	{"names.txt", []string{"-o", "name"}},
}

// TestAgainstGolden checks plan --against's text and markdown for the
// example; -update rewrites testdata/golden/review/example.txtar, to be
// reviewed as a pull request's reviewer would read it.
func TestAgainstGolden(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "golden", "review")
	old, err := os.ReadFile(filepath.Join(dir, "example-old.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "example.txtar")
	want := map[string][]byte{}
	if data, err := os.ReadFile(path); err == nil {
		for _, f := range txtar.Parse(data).Files {
			want[f.Name] = f.Data
		}
	} else if !*golden.Update {
		t.Fatal(err)
	}
	archive := &txtar.Archive{Comment: []byte("kubectl svcproxy plan --example --against - < example-old.yaml, and the flags of each file (internal/cli/against_golden_test.go)\n")}
	for _, c := range againstGolden {
		args := append([]string{"diff", "--example", "--against", "-", "--color=never"}, c.args...)
		out, stderr, code := run(t, string(old), args...)
		if code != ExitChanges {
			t.Errorf("%s: exit %d, stderr %q", c.file, code, stderr)
		}
		archive.Files = append(archive.Files, txtar.File{Name: c.file, Data: []byte(out)})
		if !*golden.Update && !bytes.Equal(want[c.file], []byte(out)) {
			t.Errorf("%s (%v) differs from %s; rerun with -update and review:\n%s", c.file, args, path, out)
		}
	}
	if *golden.Update {
		if err := os.WriteFile(path, txtar.Format(archive), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
