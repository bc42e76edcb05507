package testcluster

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testWaits are startWaits scaled down: a "start" here takes a second or
// two, not minutes. The stall bound is still 15 times the shell's pace,
// so that a loaded machine does not fake a stall.
var testWaits = waits{limit: 3 * time.Second, stall: 1500 * time.Millisecond, attempt: time.Second, interval: 20 * time.Millisecond}

// startShell runs script under sh as a Process, its output logged, and
// stops it by its PID when the test ends.
func startShell(t *testing.T, script string) *Process {
	t.Helper()
	p, err := StartCommand("server", exec.Command("sh", "-c", script), filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// readyAfter is a readiness check that answers the same "not yet" until d
// has passed.
func readyAfter(d time.Duration) func(context.Context) error {
	at := time.Now().Add(d)
	return func(context.Context) error {
		if time.Now().Before(at) {
			return errors.New("not ready yet")
		}
		return nil
	}
}

// TestWaitHoldsWhileProgressing: a server that takes longer than the
// stall bound to get ready, but logs on the way, is waited for.
func TestWaitHoldsWhileProgressing(t *testing.T) {
	p := startShell(t, "while :; do echo starting; sleep 0.1; done")
	begin := time.Now()
	if err := waitFor(p, testWaits, readyAfter(testWaits.stall+testWaits.stall/3)); err != nil {
		t.Fatalf("a slow but progressing server: %v", err)
	}
	if took := time.Since(begin); took < testWaits.stall {
		t.Fatalf("ready after %v, before it was", took)
	}
}

// TestWaitHoldsWhileAnswersChange: a server that logs nothing, but whose
// readiness answer changes (one more check passing), is waited for too.
func TestWaitHoldsWhileAnswersChange(t *testing.T) {
	p := startShell(t, "exec sleep 60")
	begin := time.Now()
	step := testWaits.stall / 3
	err := waitFor(p, testWaits, func(context.Context) error {
		n := int(time.Since(begin) / step)
		if n >= 4 {
			return nil
		}
		return errors.New("checks passed: " + strings.Repeat("+", n))
	})
	if err != nil {
		t.Fatalf("a server whose answers change: %v", err)
	}
}

// TestWaitGivesUpOnAStall: a server that neither logs nor answers
// anything new fails after the stall bound, long before the limit,
// saying so and quoting its log.
func TestWaitGivesUpOnAStall(t *testing.T) {
	p := startShell(t, "echo listening; exec sleep 60")
	begin := time.Now()
	err := waitFor(p, testWaits, readyAfter(time.Hour))
	took := time.Since(begin)
	if err == nil || !strings.Contains(err.Error(), "no progress") || !strings.Contains(err.Error(), "listening") {
		t.Fatalf("a hung server: got %v, want no progress and its log", err)
	}
	// The error says which bound ended the wait ("no progress", not the
	// limit's "still making progress"); how long it took is only
	// checked from below.
	if took < testWaits.stall {
		t.Fatalf("gave up after %v, before the stall bound %v", took, testWaits.stall)
	}
}

// TestWaitHasALimit: a server that keeps logging but never gets ready
// fails at the limit, with its log.
func TestWaitHasALimit(t *testing.T) {
	p := startShell(t, "while :; do echo still starting; sleep 0.1; done")
	begin := time.Now()
	err := waitFor(p, testWaits, readyAfter(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "not ready after 3s") || !strings.Contains(err.Error(), "still starting") {
		t.Fatalf("got %v, want the limit and the log", err)
	}
	if took := time.Since(begin); took < testWaits.limit {
		t.Fatalf("gave up after %v, before the limit", took)
	}
}

// TestWaitFailsAtOnceWhenTheServerExits: an exit is the one early
// failure, with the exit status and the log.
func TestWaitFailsAtOnceWhenTheServerExits(t *testing.T) {
	p := startShell(t, "echo cannot bind; exit 3")
	// "exited", not a stall's or the limit's words: the exit ended it.
	err := waitFor(p, testWaits, readyAfter(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 3)") || !strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("got %v, want the exit and the log", err)
	}
}
