//go:build linux

package outfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// shortTempDir is a temporary directory whose path fits in a unix
// socket's address, which t.TempDir's may not.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "of")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// specials make each kind of file that must never be replaced, by the
// name the refusal gives it.
var specials = []struct {
	kind string
	make func(t *testing.T, path string)
}{
	{"a directory", func(t *testing.T, path string) {
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}},
	{"a FIFO", func(t *testing.T, path string) {
		if err := syscall.Mkfifo(path, 0o666); err != nil {
			t.Fatal(err)
		}
	}},
	{"a socket", func(t *testing.T, path string) {
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}},
	// /dev/null's own numbers, in the test's directory: the real one is
	// never touched.
	{"a character device", func(t *testing.T, path string) {
		testenv.RequireRoot(t)
		if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	}},
}

// fileType is what is at path now, for the assertion that it is unchanged.
func fileType(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Type()
}

func assertRefused(t *testing.T, err error, path string, reason ...string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("write %s: got %v, want a refusal", path, err)
	}
	if re.Path != path || !strings.Contains(err.Error(), path) {
		t.Errorf("refusal %q does not name %s", err, path)
	}
	for _, r := range reason {
		if !strings.Contains(re.Reason, r) {
			t.Errorf("refusal %q: want the reason %q", err, r)
		}
	}
}

// assertNoTemp checks that no temporary file is left in dir.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

func assertFile(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want a regular file with %04o", path, fi.Mode(), perm)
	}
	if got, _ := os.ReadFile(path); string(got) != content {
		t.Errorf("%s holds %q, want %q", path, got, content)
	}
}

func TestWriteNewAndRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh")
	if err := Write(fresh, writeString("new\n")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, fresh, "new\n", 0o600)

	// An existing file keeps its permission bits, as with `>`.
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("old content, longer\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(old, writeString("replaced\n")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, old, "replaced\n", 0o644)
	assertNoTemp(t, dir)
}

func TestWriteFailureKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep")
	if err := os.WriteFile(path, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the write's error", err)
	}
	assertFile(t, path, "before\n", 0o600)
	assertNoTemp(t, dir)
}

// TestWriteRefusesSpecialFiles: a device, FIFO, socket or directory, or
// a symbolic link to one, is refused and stays what it was.
func TestWriteRefusesSpecialFiles(t *testing.T) {
	for _, sp := range specials {
		t.Run(sp.kind, func(t *testing.T) {
			dir := shortTempDir(t)
			path, link := filepath.Join(dir, "null"), filepath.Join(dir, "link")
			sp.make(t, path)
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			before := fileType(t, path)
			assertRefused(t, Write(path, writeString("x")), path, "it is "+sp.kind)
			assertRefused(t, Write(link, writeString("x")), link, "symbolic links lead to "+path, "it is "+sp.kind)
			if after := fileType(t, path); after != before {
				t.Errorf("%s: was %v, is %v after a refused write", path, before, after)
			}
			if fileType(t, link) != fs.ModeSymlink {
				t.Errorf("%s is no longer a symbolic link", link)
			}
			assertNoTemp(t, dir)
		})
	}
}

func TestWriteThroughSymbolicLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, rel, chain := filepath.Join(dir, "abs"), filepath.Join(dir, "rel"), filepath.Join(dir, "chain")
	for link, dest := range map[string]string{abs: target, rel: "real", chain: "abs"} {
		if err := os.Symlink(dest, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, link := range []string{abs, rel, chain} {
		if err := Write(link, writeString(link+"\n")); err != nil {
			t.Fatal(err)
		}
		// The file it leads to is replaced, and the link stays a link.
		assertFile(t, target, link+"\n", 0o644)
		if fileType(t, link) != fs.ModeSymlink {
			t.Errorf("%s is no longer a symbolic link", link)
		}
	}

	// A link to a file not yet there creates it, as `>` does.
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink("later", dangling); err != nil {
		t.Fatal(err)
	}
	if err := Write(dangling, writeString("later\n")); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(dir, "later"), "later\n", 0o600)
	assertNoTemp(t, dir)
}

func TestWriteRefusesLinkLoops(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, Write(loop, writeString("x")), loop, "symbolic links")
	assertNoTemp(t, dir)
}

// TestWriteRefusesOthersLinks: root does not follow a link another user
// owns (in /tmp the kernel would not let `>` follow it either).
func TestWriteRefusesOthersLinks(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious")
	if err := os.WriteFile(precious, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "planted")
	if err := os.Symlink(precious, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, Write(link, writeString("x")), link, "owned by uid 65534")
	assertFile(t, precious, "keep\n", 0o644)
}
