package statefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// OpenOwnFile reads a file only the running user can have written: the
// tests of OpenFile on the file, of the directories above on its
// directory, and nothing created.
func TestOpenOwnFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "node.plan")
	if err := os.WriteFile(path, []byte("plan"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenOwnFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if string(data) != "plan" {
		t.Fatalf("read %q", data)
	}

	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := OpenOwnFile(path)
		assertRefused(t, err, path, "writable by its group or others")
	}
	os.Chmod(path, 0o600)

	link := filepath.Join(dir, "link.plan")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	_, err = OpenOwnFile(link)
	assertRefused(t, err, link, "symbolic link")

	missing := filepath.Join(dir, "none", "node.plan")
	if _, err := OpenOwnFile(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing directory: got %v", err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenOwnFile created %s", filepath.Dir(missing))
	}
	if _, err := OpenOwnFile(dir); err == nil {
		t.Fatalf("a directory was opened as a file")
	}
}

// A file of another user, or in a directory another user can write, is
// refused.
func TestOpenOwnFileOfAnotherUser(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "node.plan")
	if err := os.WriteFile(path, []byte("plan"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err := OpenOwnFile(path)
	assertRefused(t, err, path, "owned by uid 65534, not by the running user")

	os.Chown(path, 0, 0)
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	_, err = OpenOwnFile(path)
	assertRefused(t, err, dir, "owned by uid 65534, neither root nor the running user")
	os.Chown(dir, 0, 0)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = OpenOwnFile(path)
	assertRefused(t, err, dir, "writable by its group or others and not sticky")
	// A sticky directory, as /tmp, keeps others from renaming the file.
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenOwnFile(path); err != nil {
		t.Fatalf("a file in a sticky directory: %v", err)
	} else {
		f.Close()
	}
}
