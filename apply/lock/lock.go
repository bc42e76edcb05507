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

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
)

// DefaultPath is the lock file used unless --lock-file says otherwise. It
// sits in the state directory, which deploy/base/daemonset.yaml mounts from the
// host, so a run in the DaemonSet and a run by hand on the node share it.
const DefaultPath = "/run/kubectl-svcproxy/apply.lock"

// ErrHeld is returned (wrapped) when another process holds the lock.
var ErrHeld = errors.New("lock held by another run")

// Lock is a held lock; Release frees it.
type Lock struct{ f *os.File }

// Acquire takes the lock at path, waiting up to wait for another holder to
// finish (0: fail at once). The holder's PID is written into the file so
// that the error can name it.
//
// The lock file is opened as statefile opens the tool's files: never
// through a symbolic link, only if it and its directory are the running
// user's and not writable by others (and the directories above pass
// statefile's test), created with mode 0600 in a directory created with
// 0700. Otherwise Acquire fails, naming the path and the reason.
//
// Unlike the caches beside it in the state directory, the lock is not
// optional: it is what keeps two runs from interleaving their writes, so
// a lock file that cannot be opened or created (a read-only filesystem,
// a full one, no permission) fails Acquire and stops the command, where a
// cache that cannot be written is only a warning. Once the lock is held,
// a failure to record the PID in it is ignored: it only names the holder.
func Acquire(path string, wait time.Duration) (*Lock, error) {
	f, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		busy, err := tryLock(f)
		if err == nil && !busy {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			holder := readPID(f)
			f.Close()
			hint := "use --lock-wait to wait for it"
			if wait > 0 {
				hint = fmt.Sprintf("still, after waiting %v; --lock-wait sets how long to wait", wait)
			}
			return nil, fmt.Errorf("%w: %s is held by pid %s (%s)", ErrHeld, path, holder, hint)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// open opens the lock file, checked.
func open(path string) (*os.File, error) {
	dir, err := statefile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.OpenFile(filepath.Base(path))
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
