package cli

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// signalName, which every system builds, names the handled signals as
// unix.SignalName does.
func TestSignalNameIsUnixs(t *testing.T) {
	for _, s := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		if got, want := signalName(s), unix.SignalName(s); got != want {
			t.Errorf("signalName(%d) = %q, want %q", s, got, want)
		}
	}
}
