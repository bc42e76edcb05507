package testcluster

import (
	"context"
	"fmt"
	"os"
	"time"
)

// A loaded test machine (load 9 to 13 on two cores) has taken kube-apiserver
// more than the 60 s a fixed bound allowed to become ready: slow, not
// broken. So Start waits on progress instead: as long as kube-apiserver
// runs and shows that it is getting somewhere (its log grows, or the
// readiness check answers something new, such as one more post-start hook
// done), it gets up to startLimit. It fails at once when the process
// exits, and after stallLimit without any sign of progress, which is a
// hang rather than a slow start.
const (
	startLimit = 5 * time.Minute
	stallLimit = 2 * time.Minute
	// attemptLimit bounds one readiness check, so that a request that
	// hangs does not keep the wait from noticing an exit or a stall.
	attemptLimit = 15 * time.Second
)

// waits are the bounds of one wait for a server (the constants above;
// tests use shorter ones).
type waits struct {
	limit, stall, attempt, interval time.Duration
}

var startWaits = waits{limit: startLimit, stall: stallLimit, attempt: attemptLimit, interval: 100 * time.Millisecond}

// waitFor calls cond until it returns nil. It fails when p exits, when
// p's log and cond's answer have stayed the same for w.stall, or after
// w.limit; the error quotes cond's last answer and the tail of p's log.
func waitFor(p *Process, w waits, cond func(context.Context) error) error {
	start := time.Now()
	progress, size, last := start, p.logSize(), ""
	for {
		if err := p.Running(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.attempt)
		err := cond(ctx)
		cancel()
		if err == nil {
			return nil
		}
		now := time.Now()
		if s := p.logSize(); s != size || err.Error() != last {
			progress, size, last = now, s, err.Error()
		}
		switch {
		case now.Sub(start) >= w.limit:
			return fmt.Errorf("%s not ready after %v, still making progress %v ago: %v\n%s",
				p.name, w.limit, now.Sub(progress).Round(time.Second), err, p.Tail(40))
		case now.Sub(progress) >= w.stall:
			return fmt.Errorf("%s not ready after %v, and no progress (its log did not grow, its answer did not change) for %v: %v\n%s",
				p.name, now.Sub(start).Round(time.Second), w.stall, err, p.Tail(40))
		}
		time.Sleep(w.interval)
	}
}

// logSize is the size of the process's log, for waitFor's progress.
func (p *Process) logSize() int64 {
	fi, err := os.Stat(p.log)
	if err != nil {
		return -1
	}
	return fi.Size()
}
