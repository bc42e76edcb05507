package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
)

// TestStateCacheFailureIsAWarning: a state directory that cannot be made
// or opened because its filesystem is full, read-only or not writable
// leaves the command running without the cache, with one warning line
// that reads the same for every cause; a directory refused as unsafe
// still stops it.
func TestStateCacheFailureIsAWarning(t *testing.T) {
	real := openStateDir
	t.Cleanup(func() { openStateDir = real })
	state := filepath.Join(t.TempDir(), "state")
	texts := map[string]string{}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EACCES} {
		openStateDir = func(path string) (*statefile.Dir, error) {
			return nil, &os.PathError{Op: "mkdir", Path: path, Err: errno}
		}
		streams, _, _, errOut := genericiooptions.NewTestIOStreams()
		c := &common{streams: streams}
		k := &kernelFlags{stateDir: state, cacheWarn: c.warnCache}
		d, err := k.cacheDir(1, "nftables")
		if d != nil || err != nil {
			t.Fatalf("%v: got the directory %v and the error %v, want neither", errno, d, err)
		}
		// Later failures of the same run add no line.
		c.warnCache(&os.PathError{Op: "write", Path: filepath.Join(state, "f"), Err: errno})
		got := errOut.String()
		want := "warning: the state cache was not written (mkdir " + state + ": " + errno.Error() + "); this run is not affected, the next one reads the kernel\n"
		if got != want {
			t.Errorf("%v: stderr\n%q\nwant\n%q", errno, got, want)
		}
		texts[errno.Error()] = strings.ReplaceAll(got, errno.Error(), "ERRNO")
	}
	if texts["no space left on device"] != texts["read-only file system"] {
		t.Errorf("a full and a read-only state directory warn differently:\n%q", texts)
	}

	openStateDir = func(path string) (*statefile.Dir, error) {
		return nil, &statefile.UnsafeError{Path: path, Reason: "it is writable by its group or others"}
	}
	var errOut bytes.Buffer
	c := &common{streams: genericiooptions.IOStreams{ErrOut: &errOut}}
	k := &kernelFlags{stateDir: state, cacheWarn: c.warnCache}
	if _, err := k.cacheDir(1); err == nil || !strings.Contains(err.Error(), "--state-dir: refusing "+state) {
		t.Fatalf("an unsafe state directory: got %v, want the refusal", err)
	}
	if errOut.Len() > 0 {
		t.Errorf("an unsafe state directory warned: %s", errOut.String())
	}
}
