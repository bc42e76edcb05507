package iptables

import (
	"os"
	"path/filepath"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
)

// FailCacheWrites makes every cache file write fail with err, as a full
// or read-only filesystem does, until the test ends. Tests that call it
// may not run in parallel.
func FailCacheWrites(t interface{ Cleanup(func()) }, err error) {
	real := storeCacheFile
	storeCacheFile = func(d *statefile.Dir, name string, _ statefile.Key, _ []byte) error {
		return &os.PathError{Op: "write", Path: filepath.Join(d.Path(), name), Err: err}
	}
	t.Cleanup(func() { storeCacheFile = real })
}
