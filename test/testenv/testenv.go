// Package testenv decides what a test does when this machine lacks
// something it needs: root, a command, a kernel feature, a VM. Outside CI
// it skips with the reason, so that a developer's `go test` stays useful
// anywhere. Under CI it fails with the reason: there a missing
// prerequisite is a broken CI setup, and a skip would let the kernel I/O
// go green without running.
//
// It depends on the standard library only, so that any test, and any
// test helper package (netlab, vmtest, testcluster), can use it.
package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// CIEnv is the environment variable that marks a CI run.
const CIEnv = "CI"

// InCI reports whether the tests run in CI, where every test must run:
// $CI is set to anything but "" or a false value ("false", "0"; see
// strconv.ParseBool). CI services set CI=true.
func InCI() bool {
	v := os.Getenv(CIEnv)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// SkipOrFail stops t because a prerequisite is missing: it skips t with
// reason, or fails it under CI (see InCI). Call it from the test's
// goroutine, like t.Skip.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (not skipped: %s=%s)", reason, CIEnv, os.Getenv(CIEnv))
	} else {
		t.Skip(reason)
	}
}

// RequireRoot stops t (SkipOrFail) unless it runs as root, which kernel
// tests need to create network namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "needs root to create network namespaces (run the test as root)")
	}
}

// RequireTools stops t (SkipOrFail) at the first of the commands not on
// PATH.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			SkipOrFail(t, "needs the "+name+" command (hack/install-deps.sh installs it)")
		}
	}
}
