package iptables_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
)

// TestCacheWriteFailureIsAWarning: a dump cache file that cannot be
// written, on a full state directory or a read-only or unwritable one
// alike, costs the apply nothing: it succeeds, each failure goes to
// CacheWarn naming the file and the cause, no file is left, and the next
// run dumps the kernel. With DeferFiles, SaveCache reports the same way.
func TestCacheWriteFailureIsAWarning(t *testing.T) {
	requireNFT(t)
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EACCES} {
		t.Run(errno.Error(), func(t *testing.T) {
			applyipt.FailCacheWrites(t, errno)
			n := newNode(t, applyipt.NFT)
			var warned []error
			n.client.CacheWarn = func(err error) { warned = append(warned, err) }
			snap := snapshot(web("10.244.0.11", "10.244.1.12"))
			n.apply(t, snap) // fails the test on an error
			file := filepath.Join(cacheDirOf(n), cacheFileIPv4)
			assertWarned(t, warned, errno, file)
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a cache file was left (stat: %v)", err)
			}
			n.nextRun()
			dumps := n.rec.dumps
			n.assertNoChanges(t, snap)
			if n.rec.dumps == dumps {
				t.Error("the next run did not dump the kernel")
			}

			warned = nil
			n.client.CacheWarn = func(err error) { warned = append(warned, err) }
			n.client.DeferFiles = true
			n.apply(t, snapshot(web("10.244.0.11", "10.244.1.13")))
			if err := n.client.SaveCache(); err != nil {
				t.Fatalf("SaveCache: %v, want the failed write as a warning only", err)
			}
			assertWarned(t, warned, errno, file)
		})
	}
}

// assertWarned checks that warnings came, each for cause, one naming file.
func assertWarned(t *testing.T, warned []error, cause error, file string) {
	t.Helper()
	if len(warned) == 0 {
		t.Fatal("no warning for the cache file that could not be written")
	}
	named := false
	for _, err := range warned {
		if !errors.Is(err, cause) {
			t.Errorf("warned %v, want the cause %v", err, cause)
		}
		named = named || strings.Contains(err.Error(), "write "+file+": "+cause.Error())
	}
	if !named {
		t.Errorf("no warning names %s: %v", file, warned)
	}
}
