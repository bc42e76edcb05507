package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The commands that write the kernel (apply, once or --watch; reset;
// proxy) run under withInterrupt: the first SIGTERM or SIGINT cancels
// their context. The context is looked at between transactions only: sync
// checks it after planning, and hands the apply a context that is never
// cancelled, so a write that has started (every restore, netlink batch
// and ipvs phase of the plan) finishes and nothing starts after it. A
// second signal ends the process at once, by the signal's default action;
// a restore already running still finishes, as it has all of its input
// (apply/iptables.OSExec). SIGKILL cannot be handled: what it leaves is
// each mode's write order (see apply/iptables.Tables).

// interruptedError is the cause of a context cancelled by a signal.
type interruptedError struct{ sig syscall.Signal }

func (e *interruptedError) Error() string { return "interrupted by " + signalName(e.sig) }

// signalName names the signals withInterrupt handles as unix.SignalName
// does, which exists only on Unix systems.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}

// withInterrupt returns ctx cancelled, with an *interruptedError as its
// cause, by the first SIGTERM or SIGINT, after which the signals have
// their default action again. stop releases the signals.
func withInterrupt(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			cancel(&interruptedError{sig: s.(syscall.Signal)})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(context.Canceled)
		})
	}
}

// interruption returns the signal that cancelled ctx, or nil.
func interruption(ctx context.Context) *interruptedError {
	var ie *interruptedError
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return nil
}

// notWritten is the error of a command stopped before it wrote anything:
// when a signal cancelled ctx, the signal rather than what the
// cancellation broke (a read killed half way, say).
func notWritten(ctx context.Context, err error) error {
	if ie := interruption(ctx); ie != nil && err != nil {
		return fmt.Errorf("%w before writing anything: nothing was changed", ie)
	}
	return err
}

// noteFinished says on stderr that a signal came while what (an apply, a
// reset) was under way and that it was finished; it returns the signal.
func (c *common) noteFinished(ctx context.Context, what string) *interruptedError {
	ie := interruption(ctx)
	if ie != nil {
		fmt.Fprintf(c.streams.ErrOut, "%v: the %s under way was finished, nothing more was started\n", ie, what)
	}
	return ie
}
