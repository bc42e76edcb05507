//go:build unix

package trigger

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A file that is not a regular one (/dev/zero, a FIFO) is not read: File
// returns at once, rather than hash an endless device or wait for a
// FIFO's writer.
func TestFileNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", fifo} {
		done := make(chan fileState, 1)
		go func() { done <- readState(path) }()
		select {
		case st := <-done:
			if st.err != "not a regular file" {
				t.Errorf("%s: state %+v, want the error", path, st)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5s", path)
		}
	}
}
