package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotOutputIsAFormat checks that -o is the format, as in every
// other command and in kubectl: `snapshot -o json` prints JSON to stdout
// and writes no file named json.
func TestSnapshotOutputIsAFormat(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		json bool
	}{
		{[]string{"-o", "json"}, true},
		{[]string{"--output=json"}, true},
		{[]string{"-o", "yaml"}, false},
		{nil, false},
	} {
		args := append([]string{"snapshot", "--example"}, tc.args...)
		out, stderr, code := run(t, "", args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var list map[string]any
		isJSON := json.Unmarshal([]byte(out), &list) == nil
		if isJSON != tc.json || !strings.Contains(out, "List") {
			t.Errorf("%v: JSON %v, want %v:\n%.200s", args, isJSON, tc.json, out)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("snapshot to stdout wrote files: %v", entries)
	}
}

// TestSnapshotOutputFile checks --output-file: the format is -o's, or JSON
// for a .json file, and a failed snapshot leaves the file as it was.
func TestSnapshotOutputFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		file string
		args []string
		json bool
	}{
		{"a.yaml", nil, false},
		{"b.json", nil, true},
		{"c.json", []string{"-o", "yaml"}, false},
		{"d.txt", []string{"-o", "json"}, true},
	} {
		path := filepath.Join(dir, tc.file)
		args := append([]string{"snapshot", "--example", "--output-file", path}, tc.args...)
		out, stderr, code := run(t, "", args...)
		if code != ExitOK || out != "" {
			t.Fatalf("%v: exit %d, stdout %q: %s", args, code, out, stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if isJSON := json.Valid(data); isJSON != tc.json {
			t.Errorf("%v: JSON %v, want %v", args, isJSON, tc.json)
		}
	}
	path := filepath.Join(dir, "a.yaml")
	before, _ := os.ReadFile(path)
	if _, _, code := run(t, "", "snapshot", "-f", filepath.Join(dir, "missing.yaml"), "--output-file", path); code != ExitError {
		t.Fatalf("snapshot of a missing file: exit %d, want %d", code, ExitError)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a failed snapshot changed --output-file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("want the 4 snapshot files and no temporary file left, got %v", entries)
	}
}

// TestSnapshotOutputErrors checks that a file name given to -o, as before
// -o was the format, is refused with a pointer to --output-file, and that
// the deprecated --format still works but says so.
func TestSnapshotOutputErrors(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "cluster.yaml"}, "-o is the format, as in kubectl: write to a file with --output-file=cluster.yaml"},
		{[]string{"-o", "xml"}, `--output "xml": must be yaml or json`},
		{[]string{"--format=json", "-o", "yaml"}, "--format is deprecated, give -o only"},
	} {
		args := append([]string{"snapshot", "--example"}, tc.args...)
		if _, stderr, code := run(t, "", args...); code != ExitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", args, code, stderr, ExitError, tc.want)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("a refused snapshot wrote files: %v", entries)
	}
	out, stderr, code := run(t, "", "snapshot", "--example", "--format=json")
	if code != ExitOK || !json.Valid([]byte(out)) || !strings.Contains(stderr, "warning: --format is deprecated: use -o/--output") {
		t.Errorf("snapshot --format=json: exit %d, JSON %v, stderr %q", code, json.Valid([]byte(out)), stderr)
	}
}
