package nftables_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
)

// TestCacheWriteFailureIsAWarning: a cache file that cannot be written,
// on a full state directory or a read-only or unwritable one alike, costs
// the apply nothing: it succeeds, each failure goes to CacheWarn naming
// the file and the cause, no file is left to serve, and the next run
// reads the kernel.
func TestCacheWriteFailureIsAWarning(t *testing.T) {
	outcomes := map[string]string{}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EACCES} {
		t.Run(errno.Error(), func(t *testing.T) {
			applynft.FailCacheWrites(t, errno)
			n := withCacheDir(t, newFakeNode(t))
			var warned []error
			n.client.CacheWarn = func(err error) { warned = append(warned, err) }
			dual := dualStack(t)
			n.apply(t, dual...) // fails the test on an error
			if len(warned) == 0 {
				t.Fatal("no warning for the cache files that could not be written")
			}
			file := filepath.Join(n.client.CacheDir.Path(), cacheFileIP)
			var texts []string
			for _, err := range warned {
				if !errors.Is(err, errno) {
					t.Errorf("warned %v, want the cause %v", err, errno)
				}
				texts = append(texts, strings.ReplaceAll(err.Error(), errno.Error(), "ERRNO"))
			}
			if !strings.Contains(strings.Join(texts, "\n"), "write "+file+": ERRNO") {
				t.Errorf("the warnings do not name %s:\n%s", file, strings.Join(texts, "\n"))
			}
			if left, _ := os.ReadDir(n.client.CacheDir.Path()); len(left) > 0 {
				t.Errorf("files left in the cache directory: %v", left)
			}
			next := nextRun(t, n)
			reads := n.fake.Reads()
			next.assertNoChanges(t, dual...)
			if n.fake.Reads() == reads {
				t.Error("the next run did not read the kernel")
			}
			outcomes[errno.Error()] = strings.ReplaceAll(strings.Join(texts, "\n"), n.client.CacheDir.Path(), "DIR")
		})
	}
	// Every cause has the same outcome, down to the warnings' text.
	var first string
	for cause, got := range outcomes {
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("%s: warnings differ from another cause's:\n%s\nvs\n%s", cause, got, first)
		}
	}
}
