package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is the uid of another user.
const nobody = 65534

func openTestDir(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", path, got, want)
	}
}

// assertRefused checks that err is an UnsafeError naming path, with a
// reason that contains reason.
func assertRefused(t *testing.T, err error, path, reason string) {
	t.Helper()
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want the refusal of %s (%s)", err, path, reason)
	}
	if ue.Path != path || !strings.Contains(ue.Reason, reason) {
		t.Fatalf("got %q, want the refusal of %s because %s", err, path, reason)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
}

func TestOpenDirCreatesPrivateDirectories(t *testing.T) {
	base := t.TempDir()
	d := openTestDir(t, filepath.Join(base, "a", "b", "state"))
	sub, err := d.Sub("netns-1")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, p := range []string{"a", "a/b", "a/b/state", "a/b/state/netns-1"} {
		assertMode(t, filepath.Join(base, p), 0o700)
	}
	if sub.Path() != filepath.Join(base, "a/b/state/netns-1") {
		t.Errorf("Path() = %s", sub.Path())
	}
}

func TestWritableStateDirIsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o707, os.ModeSticky | 0o777} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := OpenDir(dir)
		assertRefused(t, err, dir, "writable by its group or others")
		parent, err := OpenDir(filepath.Dir(dir))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parent.Sub("state")
		assertRefused(t, err, dir, "writable by its group or others")
		parent.Close()
	}
}

func TestStateDirOfAnotherUserIsRefused(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDir(dir)
	assertRefused(t, err, dir, "owned by uid 65534, not by the running user")
	// Nor may a directory above it be another user's.
	_, err = OpenDir(filepath.Join(dir, "inner"))
	assertRefused(t, err, dir, "owned by uid 65534, neither root nor the running user")
}

func TestParentDirectories(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	sticky := filepath.Join(base, "sticky")
	for dir, mode := range map[string]os.FileMode{open: 0o777, sticky: os.ModeSticky | 0o777} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	_, err := OpenDir(filepath.Join(open, "state"))
	assertRefused(t, err, open, "writable by its group or others and not sticky")
	// A sticky parent, as /tmp, is fine: no one else can rename the
	// tool's directory in it.
	openTestDir(t, filepath.Join(sticky, "state"))
}

func TestSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	// The state directory itself may not be a link.
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, err := OpenDir(link)
	assertRefused(t, err, link, "symbolic link")
	// A link above it, owned by root or the user (as /var/run), is followed.
	d := openTestDir(t, filepath.Join(link, "state"))
	if want := filepath.Join(real, "state"); d.Path() != want {
		t.Errorf("Path() = %s, want %s", d.Path(), want)
	}
	rel := filepath.Join(base, "rel")
	if err := os.Symlink("real/../real", rel); err != nil {
		t.Fatal(err)
	}
	openTestDir(t, filepath.Join(rel, "state"))
	if os.Geteuid() == 0 {
		if err := os.Lchown(link, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		_, err := OpenDir(filepath.Join(link, "state"))
		assertRefused(t, err, link, "symbolic link owned by uid 65534")
	}
}
