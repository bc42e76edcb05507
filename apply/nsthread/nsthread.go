// Package nsthread runs functions on an OS thread switched into another
// network namespace, and switches the thread back afterwards. A thread's
// namespace decides where the sockets it creates live and which
// /proc/sys/net it sees; a goroutine must stay on its thread meanwhile.
package nsthread

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// Do runs fn on a locked OS thread that is switched into ns, then switches
// the thread back. Sockets that fn creates stay in ns for their whole life.
// Goroutines that fn starts do not run in ns.
func Do(ns netns.NsHandle, fn func() error) error {
	return Scoped(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("enter network namespace: %w", err)
		}
		return fn()
	})
}

// Scoped runs fn on a locked OS thread, which fn may switch into other
// network namespaces (netns.Set, netns.NewNamed), and then returns the
// thread to the namespace it started in. If that fails, the error says so
// and the thread stays locked, so that the runtime retires it with its
// goroutine instead of reusing it in the wrong namespace.
func Scoped(fn func() error) (err error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current network namespace: %w", err)
	}
	defer orig.Close()
	// Deferred, so that the thread also returns when fn panics or calls
	// runtime.Goexit (t.Fatal).
	defer func() {
		if serr := netns.Set(orig); serr != nil {
			err = errors.Join(err, fmt.Errorf("return to the original network namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// NewNamed creates the named network namespace /run/netns/name and returns
// a handle to it, leaving the calling thread in its own namespace. If the
// thread cannot return, the new namespace is removed again.
func NewNamed(name string) (netns.NsHandle, error) {
	h := netns.None()
	err := Scoped(func() error {
		var err error
		h, err = netns.NewNamed(name) // switches the thread, even on most failures
		return err
	})
	if err != nil && h.IsOpen() { // created, but the thread did not return
		h.Close()
		netns.DeleteNamed(name)
		return netns.None(), err
	}
	return h, err
}
