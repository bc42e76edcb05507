package kernel

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// listener receives nf_tables trace events.
type listener struct{ fd int }

func listen() (*listener, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	l := &listener{fd: fd}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		l.close()
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, unix.NFNLGRP_NFTRACE); err != nil {
		l.close()
		return nil, fmt.Errorf("join the nf_tables trace group: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	return l, nil
}

func (l *listener) close() { _ = unix.Close(l.fd) }

// collect reads events until done says one is the last, or quiet has
// passed without one after the first, or deadline.
func (l *listener) collect(quiet time.Duration, deadline time.Time, done func(Event) bool) ([]Event, error) {
	tv := unix.NsecToTimeval(quiet.Nanoseconds())
	if err := unix.SetsockoptTimeval(l.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, err
	}
	var events []Event
	buf := make([]byte, 1<<16)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(l.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			if len(events) > 0 {
				break
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read trace events: %w", err)
		}
		evs, err := decodeMessages(buf[:n])
		if err != nil {
			return nil, err
		}
		events = append(events, evs...)
		if slices.ContainsFunc(evs, done) {
			break
		}
	}
	return events, nil
}
