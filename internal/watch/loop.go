package watch

import (
	"context"
	"time"

	utilclock "k8s.io/utils/clock"
)

// loop runs fn like kube-proxy's BoundedFrequencyRunner (pkg/proxy/runner):
// trigger asks for a run as soon as allowed, runs are at least minInterval
// apart, so that every trigger arriving meanwhile is served by one run,
// and a run happens at least every period even without triggers. Unlike
// kube-proxy, which retries a failed sync after its sync period, a failure
// is retried with exponential backoff: retryMin doubling up to period, so
// that a lasting failure (the lock held by a cron run, an iptables
// binary missing) neither spins nor waits a full period after a blip.
type loop struct {
	minInterval time.Duration
	period      time.Duration
	retryMin    time.Duration // the first retry's delay
	fn          func(ctx context.Context) error
	run         chan struct{} // holds at most one pending trigger
	// clock gives the loop its timers; nil means the real clock. Tests
	// set a fake one.
	clock utilclock.Clock
}

func newLoop(minInterval, period time.Duration, fn func(ctx context.Context) error) *loop {
	return &loop{
		minInterval: minInterval,
		period:      period,
		retryMin:    min(max(minInterval, time.Second), period),
		fn:          fn,
		run:         make(chan struct{}, 1),
	}
}

// trigger asks for a run. It never blocks: triggers coalesce.
func (l *loop) trigger() {
	select {
	case l.run <- struct{}{}:
	default:
	}
}

// loop runs until ctx is done.
func (l *loop) loop(ctx context.Context) {
	c := l.clock
	if c == nil {
		c = utilclock.RealClock{}
	}
	next := c.NewTimer(l.period)
	defer next.Stop()
	var retry time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C():
		case <-l.run:
		}
		if !next.Stop() {
			// It fired, maybe while the loop took a trigger. Drop that
			// tick: time.Timer's channel has none left after Stop (Go
			// 1.23), but a fake clock's timer keeps it.
			select {
			case <-next.C():
			default:
			}
		}
		err := l.fn(ctx)
		wait := l.period
		if err != nil {
			retry = l.backoff(retry)
			wait = retry
		} else {
			retry = 0
		}
		next.Reset(wait)
		// The rate limit: whatever arrives now waits for the next run.
		select {
		case <-ctx.Done():
			return
		case <-c.After(l.minInterval):
		}
	}
}

// backoff returns the delay before the next retry, given the last one.
func (l *loop) backoff(last time.Duration) time.Duration {
	if last == 0 {
		return l.retryMin
	}
	return min(2*last, l.period)
}

// RunBounded runs fn with the sync loop of apply --watch (see loop): a run
// soon after each receive on changes, runs at least minInterval apart, one
// at least every period, and failures retried with backoff, until ctx
// ends. The userspace proxy reloads with it.
func RunBounded(ctx context.Context, changes <-chan struct{}, minInterval, period time.Duration, fn func(ctx context.Context) error) {
	l := newLoop(minInterval, period, fn)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
				l.trigger()
			}
		}
	}()
	l.loop(ctx)
}
