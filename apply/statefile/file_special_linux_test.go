package statefile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpecialFilesAreNotReplaced: a write refuses to rename over what the
// tool never makes (a directory, a FIFO, a device), and leaves it.
func TestSpecialFilesAreNotReplaced(t *testing.T) {
	d := openTestDir(t, filepath.Join(t.TempDir(), "state"))
	made := map[string]func(string) error{
		"dir":  func(p string) error { return os.Mkdir(p, 0o700) },
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o600) },
	}
	if os.Geteuid() == 0 {
		made["null"] = func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }
	}
	for name, mk := range made {
		path := filepath.Join(d.Path(), name)
		if err := mk(path); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(path)
		assertRefused(t, d.Store(name, testKey, []byte("x")), path, "not a regular file")
		if after, err := os.Lstat(path); err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s: was %v, is %v (%v) after a refused write", path, before.Mode(), after, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(d.Path(), ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}
