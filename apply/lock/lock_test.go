package lock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSecondRunFailsOrWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path, 0); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire: got %v, want ErrHeld", err)
	}
	start := time.Now()
	if _, err := Acquire(path, 200*time.Millisecond); !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire with wait: got %v, want ErrHeld", err)
	} else if !strings.Contains(err.Error(), "after waiting 200ms") {
		t.Errorf("the error %q does not say how long it waited", err)
	} else if time.Since(start) < 150*time.Millisecond {
		t.Errorf("gave up after %v, want about 200ms", time.Since(start))
	}
	go func() { time.Sleep(100 * time.Millisecond); first.Release() }()
	second, err := Acquire(path, 2*time.Second)
	if err != nil {
		t.Fatalf("waiting Acquire after release: %v", err)
	}
	second.Release()
}

// TestSymlinkedLockFileIsRefused plants the lock file as a link to another
// file: Acquire must refuse it and leave the target as it was.
func TestSymlinkedLockFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("do not touch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "apply.lock")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path, 0)
	if err == nil {
		l.Release()
		t.Error("Acquire took a lock file that is a symbolic link")
	} else if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("the refusal %q does not name %s and the reason", err, path)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "do not touch\n" {
		t.Fatalf("the link's target was changed: %q, %v", data, err)
	}
}

// TestUnsafeLockDirectoryIsRefused: a lock file in a directory others can
// write, or owned by another user, or itself writable by others, is
// refused; a new one is private.
func TestUnsafeLockDirectoryIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := Acquire(filepath.Join(dir, "apply.lock"), 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	assertPerm(t, dir, 0o700)
	assertPerm(t, filepath.Join(dir, "apply.lock"), 0o600)

	for _, c := range []struct {
		path  string
		setup func(path string) error
		want  string
	}{
		{dir, func(p string) error { return os.Chmod(p, os.ModeSticky|0o777) }, "writable by its group or others"},
		{filepath.Join(dir, "apply.lock"), func(p string) error { return os.Chmod(p, 0o666) }, "writable by its group or others"},
		{dir, func(p string) error { return os.Chown(p, 65534, 65534) }, "owned by uid 65534"},
	} {
		if strings.Contains(c.want, "uid") && os.Geteuid() != 0 {
			continue
		}
		if err := c.setup(c.path); err != nil {
			t.Fatal(err)
		}
		if l, err := Acquire(filepath.Join(dir, "apply.lock"), 0); err == nil {
			l.Release()
			t.Errorf("Acquire accepted %s (%s)", c.path, c.want)
		} else if !strings.Contains(err.Error(), c.path+": it is "+c.want) {
			t.Errorf("the refusal %q does not name %s and why (%s)", err, c.path, c.want)
		}
		os.Chmod(dir, 0o700)
		os.Chmod(filepath.Join(dir, "apply.lock"), 0o600)
	}
}

func assertPerm(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
	}
}
