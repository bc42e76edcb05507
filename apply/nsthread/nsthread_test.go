package nsthread

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// TestDo enters a fresh namespace and checks that fn runs there, that its
// error comes back, and that the thread returns to the test's namespace.
func TestDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kernel test: needs root to create network namespaces (CI runs it as root)")
	}
	runtime.LockOSThread() // so that "the test's namespace" is one thread's
	defer runtime.UnlockOSThread()
	home, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer home.Close()
	var other netns.NsHandle
	if err := Scoped(func() error {
		other, err = netns.New() // unnamed: gone with its last handle
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if !inside(home) {
		t.Fatal("Scoped left the thread in the namespace fn created")
	}
	sentinel := errors.New("from fn")
	err = Do(other, func() error {
		if !inside(other) {
			t.Error("fn did not run in the namespace")
		}
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("Do = %v, want fn's error", err)
	}
	if !inside(home) {
		t.Error("Do left the thread in the other namespace")
	}
}

// inside reports whether the calling thread is in ns.
func inside(ns netns.NsHandle) bool {
	now, err := netns.Get()
	if err != nil {
		return false
	}
	defer now.Close()
	return now.Equal(ns)
}
