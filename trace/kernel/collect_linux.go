package kernel

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// collector sorts the trace events of the namespace as they arrive: the
// probe's are those whose packet (trace ID) first showed the probe's
// headers, as every packet's first event in a chain carries them; other
// packets may be traced at the same time, by a rule of the operator's.
type collector struct {
	want   [2]string
	ids    map[uint32]bool
	events []Event
	// last is when the probe's last event came; ended is set once the
	// probe reached the check's own chain at the end of the output or
	// input path, after every translation.
	last  time.Time
	ended bool
}

func (c *collector) add(ev Event) {
	if s, d, ok := headerAddrs(ev.Network, ev.Transport); ok && [2]string{s.String(), d.String()} == c.want {
		c.ids[ev.ID] = true
	}
	if !c.ids[ev.ID] {
		return
	}
	c.events = append(c.events, ev)
	c.last = time.Now()
	if ev.Family == "inet" && ev.Table == TableName && (ev.Chain == chainPost || ev.Chain == chainIn) {
		c.ended = true
	}
}

// collect reads the probe's events until it reached the end of its path
// (unless untilQuiet: the node's own packet to one of its addresses
// passes the postrouting hooks and then, over loopback, the prerouting
// and input hooks again), or quiet has passed without one of its events
// after the first. No event of the probe within wait, or events that
// have not stopped by then, are an error.
func (l *listener) collect(p Probe, quiet, wait time.Duration, untilQuiet bool) ([]Event, error) {
	tv := unix.NsecToTimeval(min(quiet, wait).Nanoseconds() / 3)
	if err := unix.SetsockoptTimeval(l.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("bound the wait for trace events: %w", err)
	}
	c := &collector{want: p.addrs(), ids: map[uint32]bool{}}
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(wait)
	for {
		switch {
		case len(c.events) > 0 && (c.ended && !untilQuiet || time.Since(c.last) >= quiet):
			return c.events, nil
		case time.Now().After(deadline) && len(c.events) == 0:
			return nil, fmt.Errorf("waited %v for the kernel's nf_tables trace events of the probe, and none came: "+
				"the kernel did not pass it to the check's first chain (priority %d); a chain of lower priority, "+
				"an ingress hook or the interface dropped it", wait, priorityFirst)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("waited %v for the kernel's nf_tables trace events of the probe to stop, and they did not (%d so far)", wait, len(c.events))
		}
		n, _, err := unix.Recvfrom(l.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read trace events: %w", err)
		}
		evs, err := decodeMessages(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			c.add(ev)
		}
	}
}
