// Package trigger tells a long-running proxy when its input has changed: a
// snapshot file, polled, or the API server's Services, EndpointSlices,
// ServiceCIDRs and the proxy's Node, watched. It only signals; the proxy
// reloads the whole input and renders it again, so a lost or duplicated
// signal costs at most one redundant render.
package trigger

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"os"
	"time"
)

// Signal is a coalescing notification: any number of changes while the
// receiver is busy give one pending receive.
type Signal chan struct{}

func newSignal() Signal { return make(Signal, 1) }

// notify records a change without blocking.
func (s Signal) notify() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// File polls path every interval until ctx is done and signals when its
// content changes. The first state is read before File returns, so a
// caller that loads the file afterwards misses no change. A file that
// cannot be read counts as a change each time its error changes; the
// caller's reload then reports the error.
func File(ctx context.Context, path string, interval time.Duration, log *slog.Logger) Signal {
	sig := newSignal()
	last := readState(path)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var changed bool
			if last, changed = last.next(path); changed {
				log.Debug("snapshot file changed", "path", path)
				sig.notify()
			}
		}
	}()
	return sig
}

// fileState identifies one version of a file: its size and modification
// time, which are cheap to read, and a hash of its content, read only when
// those change (an editor may write the same bytes again).
type fileState struct {
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
	err     string
}

func readState(path string) fileState {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{err: err.Error()}
	}
	return hashFile(path, fi)
}

// next is the file's state now, hashing only if size or mtime moved, and
// whether its content (or error) differs from s.
func (s fileState) next(path string) (fileState, bool) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		n := fileState{err: err.Error()}
		return n, n.err != s.err
	case s.err == "" && fi.Size() == s.size && fi.ModTime().Equal(s.modTime):
		return s, false
	}
	n := hashFile(path, fi)
	// Touched but the same bytes: the new mtime is kept, nothing signalled.
	return n, n.err != s.err || n.sum != s.sum
}

// hashFile hashes a regular file only: /dev/zero would be hashed for ever
// and a FIFO would block the open, before the proxy's first load could
// report what is wrong with its -f.
func hashFile(path string, fi os.FileInfo) fileState {
	if !fi.Mode().IsRegular() {
		return fileState{err: "not a regular file"}
	}
	f, err := os.Open(path)
	if err != nil {
		return fileState{err: err.Error()}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fileState{err: err.Error()}
	}
	s := fileState{size: fi.Size(), modTime: fi.ModTime()}
	h.Sum(s.sum[:0])
	return s
}
