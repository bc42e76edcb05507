package watch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLoop runs a loop on a fake clock and records when it ran. Its
// methods run inside synctest.Test: each moves the clock or triggers, then
// waits (synctest.Wait) until the loop is blocked again, having done all it
// will do at that time. Only the test moves the clock, so the runs are
// exact, whatever the machine's load.
type fakeLoop struct {
	t     *testing.T
	l     *loop
	clock *clocktesting.FakeClock
	start time.Time

	mu   sync.Mutex
	runs []time.Duration // when each run started, since start
}

func newFakeLoop(t *testing.T) *fakeLoop {
	c := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &fakeLoop{t: t, clock: c, start: c.Now()}
}

// fn is a loop function that records each run and returns result(n) for
// the nth run (from 1); a nil result always succeeds.
func (f *fakeLoop) fn(result func(n int) error) func(context.Context) error {
	return func(context.Context) error {
		f.mu.Lock()
		f.runs = append(f.runs, f.clock.Since(f.start))
		n := len(f.runs)
		f.mu.Unlock()
		if result == nil {
			return nil
		}
		return result(n)
	}
}

// run starts l on the fake clock until the test ends.
func (f *fakeLoop) run(l *loop) {
	f.l = l
	l.clock = f.clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.loop(ctx); close(done) }()
	f.t.Cleanup(func() { cancel(); <-done })
	synctest.Wait()
}

func (f *fakeLoop) trigger() {
	f.l.trigger()
	synctest.Wait()
}

func (f *fakeLoop) step(d time.Duration) {
	f.clock.Step(d)
	synctest.Wait()
}

// want checks the runs so far, as times since the start.
func (f *fakeLoop) want(runs ...time.Duration) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Equal(f.runs, runs) {
		f.t.Fatalf("at %v: runs at %v, want %v", f.clock.Since(f.start), f.runs, runs)
	}
}

// TestLoopBatchesTriggers: a trigger runs at once; the triggers that
// arrive during the rate limit are served by one run as soon as it ends;
// then nothing runs until the period.
func TestLoopBatchesTriggers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const minInterval, period = 200 * time.Millisecond, time.Hour
		f := newFakeLoop(t)
		f.run(newLoop(minInterval, period, f.fn(nil)))
		f.trigger()
		f.want(0)
		for range 100 {
			f.trigger()
			f.step(time.Millisecond)
			f.want(0)
		}
		f.step(minInterval - 100*time.Millisecond - time.Nanosecond)
		f.want(0)
		f.step(time.Nanosecond)
		f.want(0, minInterval)
		f.step(period - time.Nanosecond)
		f.want(0, minInterval)
		f.step(time.Nanosecond)
		f.want(0, minInterval, minInterval+period)
	})
}

// TestLoopRunsEveryPeriod: without triggers it runs once a period.
func TestLoopRunsEveryPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 100 * time.Millisecond
		f := newFakeLoop(t)
		f.run(newLoop(10*time.Millisecond, period, f.fn(nil)))
		var want []time.Duration
		for i := range 5 {
			f.step(period - time.Nanosecond)
			f.want(want...)
			f.step(time.Nanosecond)
			want = append(want, time.Duration(i+1)*period)
			f.want(want...)
		}
	})
}

// TestLoopRetriesWithBackoff: a failure is retried after retryMin, then
// twice as long each time; after a success the next run is a period later.
func TestLoopRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const retryMin, period = 40 * time.Millisecond, 2 * time.Second
		f := newFakeLoop(t)
		l := newLoop(0, period, f.fn(func(n int) error {
			if n <= 4 {
				return errors.New("failing")
			}
			return nil
		}))
		l.retryMin = retryMin
		f.run(l)
		f.trigger()
		want := []time.Duration{0}
		f.want(want...)
		at := time.Duration(0)
		for _, wait := range []time.Duration{retryMin, 2 * retryMin, 4 * retryMin, 8 * retryMin, period} {
			f.step(wait - time.Nanosecond)
			f.want(want...)
			f.step(time.Nanosecond)
			at += wait
			want = append(want, at)
			f.want(want...)
		}
	})
}

func TestBackoffIsCapped(t *testing.T) {
	l := newLoop(time.Second, 5*time.Second, nil)
	var got []time.Duration
	d := time.Duration(0)
	for range 5 {
		d = l.backoff(d)
		got = append(got, d)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff sequence %v, want %v", got, want)
		}
	}
}
