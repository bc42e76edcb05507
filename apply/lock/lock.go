// Package lock keeps two runs of the tool (say, overlapping cron runs) from
// changing the kernel at the same time, with an flock on a file.
package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the lock file used unless --lock-file says otherwise. It
// sits in the state directory, which deploy/daemonset.yaml mounts from the
// host, so a run in the DaemonSet and a run by hand on the node share it.
const DefaultPath = "/run/kubectl-svcproxy/apply.lock"

// ErrHeld is returned (wrapped) when another process holds the lock.
var ErrHeld = errors.New("lock held by another run")

// Lock is a held lock; Release frees it.
type Lock struct{ f *os.File }

// Acquire takes the lock at path, waiting up to wait for another holder to
// finish (0: fail at once). The holder's PID is written into the file so
// that the error can name it.
func Acquire(path string, wait time.Duration) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			holder := readPID(f)
			f.Close()
			return nil, fmt.Errorf("%w: %s is held by pid %s (use --lock-wait to wait for it)", ErrHeld, path, holder)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

func readPID(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	if s := strings.TrimSpace(string(buf[:n])); s != "" {
		return s
	}
	return "unknown"
}

// Release frees the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
