package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// runLog records when a loop's function ran.
type runLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (r *runLog) add() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.times = append(r.times, time.Now())
	return len(r.times)
}

func (r *runLog) get() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// startLoop runs l until the test ends.
func startLoop(t *testing.T, l *loop) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.loop(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestLoopBatchesTriggers(t *testing.T) {
	const minInterval = 200 * time.Millisecond
	var runs runLog
	l := newLoop(minInterval, time.Hour, func(context.Context) error { runs.add(); return nil })
	startLoop(t, l)

	start := time.Now()
	for range 100 {
		l.trigger()
		time.Sleep(5 * time.Millisecond)
	}
	burst := time.Since(start)
	lastTrigger := time.Now()
	time.Sleep(minInterval + 100*time.Millisecond)

	got := runs.get()
	// At most one run per minInterval, plus the one the first trigger starts.
	if limit := int(burst/minInterval) + 2; len(got) > limit || len(got) < 2 {
		t.Fatalf("%d triggers in %v ran %d times, want 2..%d", 100, burst, len(got), limit)
	}
	for i := 1; i < len(got); i++ {
		if gap := got[i].Sub(got[i-1]); gap < minInterval {
			t.Errorf("runs %d and %d only %v apart, want ≥ %v", i-1, i, gap, minInterval)
		}
	}
	// The last trigger is not lost: a run follows it.
	if last := got[len(got)-1]; last.Before(lastTrigger.Add(-minInterval)) {
		t.Errorf("last run at %v, before the last trigger at %v was served", last.Sub(start), lastTrigger.Sub(start))
	}
}

func TestLoopRunsEveryPeriod(t *testing.T) {
	const period = 100 * time.Millisecond
	var runs runLog
	startLoop(t, newLoop(10*time.Millisecond, period, func(context.Context) error { runs.add(); return nil }))
	time.Sleep(5*period + period/2)
	if n := len(runs.get()); n < 4 || n > 6 {
		t.Fatalf("%d runs in 5.5 periods without triggers, want about 5", n)
	}
}

func TestLoopRetriesWithBackoff(t *testing.T) {
	const retryMin, period = 40 * time.Millisecond, 2 * time.Second
	var runs runLog
	l := newLoop(0, period, func(context.Context) error {
		if runs.add() <= 4 {
			return errors.New("failing")
		}
		return nil
	})
	l.retryMin = retryMin
	startLoop(t, l)
	l.trigger()
	time.Sleep(40*time.Millisecond + 80*time.Millisecond + 160*time.Millisecond + 320*time.Millisecond + 300*time.Millisecond)

	got := runs.get()
	if len(got) != 5 {
		t.Fatalf("%d runs, want 4 failures then a success and no run before the period", len(got))
	}
	// The retries wait retryMin, then twice as long each time.
	for i, want := 1, retryMin; i < len(got); i, want = i+1, want*2 {
		if gap := got[i].Sub(got[i-1]); gap < want || gap > want+want/2+20*time.Millisecond {
			t.Errorf("retry %d after %v, want about %v", i, gap, want)
		}
	}
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
