package healthcheck

import (
	"testing"
	"time"
)

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// TestStateFollowsPendingChanges walks the state through a proxy's life:
// healthy from the start until a change waits the timeout; a change that
// arrives during a sync stays pending after it; a failed sync leaves its
// changes pending from when they were first seen.
func TestStateFollowsPendingChanges(t *testing.T) {
	const timeout = time.Minute
	clk := newClock()
	start := clk.t
	h := New(Options{Timeout: timeout, Now: clk.now})
	step := func(what string, d time.Duration, want bool) {
		t.Helper()
		clk.t = clk.t.Add(d)
		if got := h.Healthy(); got != want {
			t.Fatalf("%s (at +%v): healthy %v, want %v", what, clk.t.Sub(start), got, want)
		}
	}
	step("started, nothing pending", 10*timeout, true)
	if st := h.state(); !st.lastUpdated.Equal(start) {
		t.Errorf("lastUpdated %v, want the start %v", st.lastUpdated, start)
	}

	h.Queued()
	step("a change pending, not late", timeout-time.Nanosecond, true)
	step("the change has waited the timeout", time.Nanosecond, false)

	h.Claim()
	h.Queued() // arrives during the sync
	queuedDuring := clk.t
	step("a sync runs", 0, false)
	h.Done(true)
	step("synced; the change that came during it is not late yet", 0, true)
	if st := h.state(); !st.lastUpdated.Equal(clk.t) {
		t.Errorf("lastUpdated %v after a sync, want %v", st.lastUpdated, clk.t)
	}
	step("it is late now", timeout, false)
	if h.pendingSince != queuedDuring {
		t.Errorf("pending since %v, want %v", h.pendingSince, queuedDuring)
	}

	h.Claim()
	h.Done(true)
	step("synced everything", 0, true)

	h.Queued()
	firstSeen := clk.t
	step("a new change", timeout/2, true)
	h.Claim()
	h.Done(false)
	step("its sync failed: still pending from when it was seen", timeout/2, false)
	if h.pendingSince != firstSeen {
		t.Errorf("pending since %v after a failed sync, want %v", h.pendingSince, firstSeen)
	}
	h.Claim()
	h.Done(true)
	step("the retry succeeded", 0, true)
}
