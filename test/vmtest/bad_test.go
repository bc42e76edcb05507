package vmtest

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"
)

// failOnPurpose makes TestGuestFailsOnPurpose fail ("error") or panic
// ("panic"); only TestBrokenGuests sets it.
var failOnPurpose = flag.String("vmtest.fail", "", "make TestGuestFailsOnPurpose fail: error or panic")

func TestGuestFailsOnPurpose(t *testing.T) {
	switch *failOnPurpose {
	case "":
		// Not a missing prerequisite: this test is TestBrokenGuests'
		// helper, run only through its flag. A plain skip, also under CI.
		t.Skip("only for TestBrokenGuests")
	case "panic":
		panic("a guest test panics on purpose")
	default:
		t.Error("a guest test fails on purpose")
	}
}

// TestBrokenGuests proves that the host side never mistakes a broken guest
// for a passing one: a kernel panic, a missing result line, a result that
// qemu's exit status contradicts and a hang are errors; a panicking test
// is an ordinary failure reported through the exit status (a failing test
// takes the same path with status 1).
func TestBrokenGuests(t *testing.T) {
	if InGuest() {
		// The host-side test must not recurse in the guest: not a missing
		// prerequisite, so a plain skip, also under CI.
		t.Skip("host side")
	}
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("boots the VM five times")
	}
	bad := BuildProgram(t, "./testdata/badinit")
	self := BuildTest(t, ".")
	cases := []struct {
		name    string
		init    string
		args    []string
		timeout time.Duration
		wantErr string // "" for a trustworthy result
		code    int
	}{
		{"kernel panic", bad, []string{"panic"}, 0, "without a result", 0},
		{"no result line", bad, []string{"nomarker"}, 0, "no result line", 0},
		{"contradicted result", bad, []string{"wrongcode"}, 0, "qemu exited with 3", 0},
		{"hang", bad, []string{"hang"}, 8 * time.Second, "timed out", 0},
		{"panicking test", self, []string{"-test.run=^TestGuestFailsOnPurpose$", "-vmtest.fail=panic"}, 0, "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Boot(context.Background(), Config{Init: c.init, Args: c.args, Timeout: c.timeout, Output: t.Output()})
			if IsUnavailable(err) {
				unavailable(t, err.Error())
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want exit status %d", err, c.code)
			case c.wantErr == "" && res.Code != c.code:
				t.Fatalf("exit status %d, want %d", res.Code, c.code)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("got error %v (exit status %d), want one containing %q", err, res.Code, c.wantErr)
			}
			t.Logf("boot took %v: %v", res.Elapsed.Round(10*time.Millisecond), err)
		})
	}
}
