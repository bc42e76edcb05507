package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// target is a file outside the state directory that a planted link
// points to.
func target(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target")
	content := []byte("do not touch\n")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

func assertUnchanged(t *testing.T, path string, content []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(content) {
		t.Fatalf("%s was changed: %q, %v", path, got, err)
	}
}

func TestFilesAreNotFollowed(t *testing.T) {
	d := openTestDir(t, filepath.Join(t.TempDir(), "state"))
	tgt, content := target(t)
	link := filepath.Join(d.Path(), "f")
	if err := os.Symlink(tgt, link); err != nil {
		t.Fatal(err)
	}
	_, err := d.OpenFile("f")
	assertRefused(t, err, link, "symbolic link")
	_, err = d.ReadFile("f")
	assertRefused(t, err, link, "symbolic link")
	// Load removes the link itself.
	if _, err := d.Load("f", testKey); err == nil {
		t.Fatal("Load through a link succeeded")
	}
	if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load left the link: %v", err)
	}
	assertUnchanged(t, tgt, content)
	// Writing replaces a link, never its target.
	if err := os.Symlink(tgt, link); err != nil {
		t.Fatal(err)
	}
	if err := d.Store("f", testKey, []byte("new")); err != nil {
		t.Fatal(err)
	}
	assertUnchanged(t, tgt, content)
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("after Store, %s is %v, %v; want a regular file", link, fi, err)
	}
}

func TestUnsafeFilesAreRefused(t *testing.T) {
	d := openTestDir(t, filepath.Join(t.TempDir(), "state"))
	path := filepath.Join(d.Path(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := d.OpenFile("f")
	assertRefused(t, err, path, "writable by its group or others")
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(d.Path(), "g")); err != nil {
		t.Fatal(err)
	}
	_, err = d.OpenFile("f")
	assertRefused(t, err, path, "2 hard links")
	if err := os.Remove(filepath.Join(d.Path(), "g")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d.Path(), "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = d.OpenFile("dir")
	assertRefused(t, err, filepath.Join(d.Path(), "dir"), "not a regular file")
	if os.Geteuid() == 0 {
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		_, err = d.OpenFile("f")
		assertRefused(t, err, path, "owned by uid 65534")
	}
	if _, err := d.OpenFile("../f"); err == nil {
		t.Error("OpenFile accepted a path")
	}
}

func TestNewFilesArePrivate(t *testing.T) {
	d := openTestDir(t, filepath.Join(t.TempDir(), "state"))
	f, err := d.OpenFile("lock")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	assertMode(t, filepath.Join(d.Path(), "lock"), 0o600)
	if err := d.WriteFile("data", []byte("x")); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(d.Path(), "data"), 0o600)
}
