package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// withLimits lowers the snapshot limits for one test.
func withLimits(t *testing.T, file, stream int64) {
	t.Helper()
	oldFile, oldStream := maxFileSize, maxStreamSize
	maxFileSize, maxStreamSize = file, stream
	t.Cleanup(func() { maxFileSize, maxStreamSize = oldFile, oldStream })
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A regular snapshot file over the file limit is refused with the limit
// named; one at the limit is read.
func TestLoadFileSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(path, []byte(kubectlList), 0o600); err != nil {
		t.Fatal(err)
	}
	withLimits(t, int64(len(kubectlList)), 1<<20)
	if _, err := LoadFile(path, nil); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	withLimits(t, int64(len(kubectlList))-1, 1<<20)
	_, err := LoadFile(path, nil)
	want := fmt.Sprintf("read %s: larger than %d bytes, the limit for a snapshot file", path, len(kubectlList)-1)
	if err == nil || err.Error() != want {
		t.Fatalf("over the limit: %v, want %q", err, want)
	}
}

// Standard input and devices are read to the stream limit and no
// further: /dev/zero is refused, having cost about the limit in memory.
func TestLoadFileStreamLimit(t *testing.T) {
	withLimits(t, 1<<30, int64(len(kubectlList)))
	if s, err := LoadFile("-", strings.NewReader(kubectlList)); err != nil || len(s.Services) == 0 {
		t.Fatalf("stdin at the limit: %v", err)
	}
	_, err := LoadFile("-", strings.NewReader(kubectlList+"\n"))
	if !errors.As(err, new(*inputlimit.TooLargeError)) || !strings.Contains(err.Error(), "the limit for a snapshot read from standard input, a pipe or a device") {
		t.Fatalf("stdin over the limit: %v", err)
	}
	const limit = 16 << 20
	withLimits(t, 1<<30, limit)
	n := allocated(func() { _, err = LoadFile("/dev/zero", nil) })
	if want := "read /dev/zero: larger than 16 MiB, the limit for a snapshot read from standard input, a pipe or a device"; err == nil || err.Error() != want {
		t.Fatalf("/dev/zero: %v, want %q", err, want)
	}
	if n > 2*limit {
		t.Errorf("reading /dev/zero to a limit of %d MiB allocated %d MiB", limit>>20, n>>20)
	}
}

// aliasBomb is a Service whose annotation, a string of size bytes, is
// anchored and aliased uses times: a document of about size bytes that
// expands to size*uses.
func aliasBomb(size, uses int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Service\nmetadata:\n  name: bomb\n  annotations:\n    a: &a ")
	b.WriteString(strings.Repeat("x", size))
	b.WriteString("\nspec:\n  bomb:\n")
	for range uses {
		b.WriteString("  - *a\n")
	}
	return []byte(b.String())
}

// The probe's alias bomb, a 1 MB string aliased 3000 times, ran the
// process out of memory; it is refused at once, having cost little.
func TestDecodeAliasBomb(t *testing.T) {
	doc := aliasBomb(1<<20, 3000)
	var err error
	n := allocated(func() { _, err = Decode("bomb.yaml", doc) })
	var ee *inputlimit.ExpansionError
	if !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), "bomb.yaml: YAML aliases expand the document") {
		t.Fatalf("got %v, want the expansion limit", err)
	}
	if n > 64<<20 {
		t.Errorf("decoding a %d KiB alias bomb allocated %d MiB", len(doc)>>10, n>>20)
	}
}

// The limit holds in every document of a stream, and in a List's item;
// a few aliases within it still decode.
func TestDecodeAliasesWithinLimit(t *testing.T) {
	ok := "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: &l {app: web}\nspec:\n  selector: *l\n  ports: [{port: 80}]\n"
	s, err := Decode("ok.yaml", []byte(ok))
	if err != nil || len(s.Services) != 1 || s.Services[0].Spec.Selector["app"] != "web" {
		t.Fatalf("aliases within the limit: %v", err)
	}
	bomb := aliasBomb(1<<20, 8)
	stream := append([]byte(ok+"---\n"), bomb...)
	if _, err := Decode("s.yaml", stream); !errors.As(err, new(*inputlimit.ExpansionError)) || !strings.HasPrefix(err.Error(), "s.yaml: document 2: ") {
		t.Fatalf("second document: %v", err)
	}
	item := strings.ReplaceAll(string(bomb), "\n", "\n  ")
	list := "apiVersion: v1\nkind: List\nitems:\n- " + item + "\n"
	if _, err := Decode("l.yaml", []byte(list)); !errors.As(err, new(*inputlimit.ExpansionError)) {
		t.Fatalf("List item: %v", err)
	}
}

// Nested aliases that go-yaml's own ratio check lets through (13 KB
// that expands to 111 MB of JSON) are refused too.
func TestDecodeNestedAliasBomb(t *testing.T) {
	if _, err := Decode("bomb.yaml", nestedAliasBomb(1000, 5, 10)); !errors.As(err, new(*inputlimit.ExpansionError)) {
		t.Fatalf("got %v, want the expansion limit", err)
	}
}

// A regular file over the real limit of 1 GiB (sparse: it takes no disk)
// is refused by its size, before a byte of it is mapped or read.
func TestLoadFileOverOneGiB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(kubectlList), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 1<<30+1); err != nil {
		t.Fatal(err)
	}
	var err error
	n := allocated(func() { _, err = LoadFile(path, nil) })
	if want := "read " + path + ": larger than 1 GiB, the limit for a snapshot file"; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if n > 1<<20 {
		t.Errorf("refusing a file by its size allocated %d KiB", n>>10)
	}
}
