package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestE2EOutputFileNotReplaced: `snapshot --output-file` and `plan --out`
// naming a character device (the issue's `--output-file /dev/null` as
// root, made safely in a temporary directory), or a link to one, stop
// with exit 2 naming the path and why, and the device stays a device. A
// link to a regular file is written through and stays a link.
func TestE2EOutputFileNotReplaced(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	null, link := filepath.Join(dir, "null"), filepath.Join(dir, "to-null")
	if err := unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(null, link); err != nil {
		t.Fatal(err)
	}
	refused := func(r result, path string) {
		t.Helper()
		want := "refusing to write " + path + ": "
		if r.code != ExitError || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "it is a character device") {
			t.Fatalf("want exit %d saying %q... it is a character device:\n%s", ExitError, want, r)
		}
		assertNullDevice(t, null)
	}
	for _, path := range []string{null, link} {
		stdout, stderr, code := run(t, "", "snapshot", "--example", "--output-file", path)
		refused(result{args: []string{"snapshot", path}, stdout: stdout, stderr: stderr, code: code}, path)
	}
	n := newE2ENode(t, "nft")
	refused(n.run("plan", append(exampleArgs, "--out="+null)...), null)

	real, toReal := filepath.Join(dir, "real.yaml"), filepath.Join(dir, "to-real.yaml")
	writeFile(t, real, "old\n")
	if err := os.Symlink("real.yaml", toReal); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "", "snapshot", "--example", "--output-file", toReal); code != ExitOK {
		t.Fatalf("snapshot through a link to a file: exit %d\n%s", code, stderr)
	}
	if fi, err := os.Lstat(toReal); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Fatalf("%s is no longer a symbolic link: %v", toReal, err)
	}
	if data, _ := os.ReadFile(real); !strings.Contains(string(data), "kind: List") {
		t.Fatalf("%s does not hold the snapshot:\n%s", real, data)
	}
}

// assertNullDevice checks that path is still the character device 1:3.
func assertNullDevice(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&os.ModeCharDevice == 0 || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		t.Fatalf("%s is now %v (rdev %d:%d), want the character device 1:3", path, fi.Mode(), unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
}

// TestE2EOutputFileParentLink: the case. In a sticky directory,
// linkdir -> target is a link that nobody (uid 65534) planted; root's
// `snapshot --output-file DIR/linkdir/snap.yaml` stops with exit 2 naming
// the link and its owner, and writes nothing into target. A link root
// owns on the same path is followed.
func TestE2EOutputFileParentLink(t *testing.T) {
	t.Parallel()
	testenv.RequireRoot(t)
	dir := t.TempDir()
	sticky, target := filepath.Join(dir, "x"), filepath.Join(dir, "target")
	for _, d := range []string{sticky, target} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sticky, 0o1777); err != nil {
		t.Fatal(err)
	}
	linkdir := filepath.Join(sticky, "linkdir")
	if err := os.Symlink(target, linkdir); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(linkdir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(linkdir, "snap.yaml")
	_, stderr, code := run(t, "", "snapshot", "--example", "--output-file", out)
	want := "refusing to write " + out + ": " + linkdir + " is a symbolic link owned by uid 65534"
	if code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("want exit %d saying %q, got exit %d:\n%s", ExitError, want, code, stderr)
	}
	if left, _ := os.ReadDir(target); len(left) > 0 {
		t.Fatalf("%s was written into: %v", target, left)
	}

	if err := os.Lchown(linkdir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, "", "snapshot", "--example", "--output-file", out); code != ExitOK {
		t.Fatalf("through root's own link: exit %d\n%s", code, stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(target, "snap.yaml")); !strings.Contains(string(data), "kind: List") {
		t.Fatalf("%s does not hold the snapshot:\n%s", filepath.Join(target, "snap.yaml"), data)
	}
}
