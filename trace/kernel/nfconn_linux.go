package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// nfconn is a netlink socket to nf_tables for the check's own table:
// every exchange on it is bounded by wait, and one that the kernel does
// not finish in time is an error that says what was waited for.
type nfconn struct {
	fd   int
	seq  uint32
	wait time.Duration
	buf  []byte
}

func dialNF(wait time.Duration) (*nfconn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nf_tables: netlink socket: %w", err)
	}
	c := &nfconn{fd: fd, wait: wait, buf: make([]byte, 1<<16), seq: uint32(time.Now().Unix())}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		c.close()
		return nil, fmt.Errorf("nf_tables: netlink bind: %w", err)
	}
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			c.close()
			return nil, fmt.Errorf("nf_tables: bound the netlink socket's waits: %w", err)
		}
	}
	return c, nil
}

func (c *nfconn) close() { _ = unix.Close(c.fd) }

// exchange numbers and sends msgs (one request, or a batch) and reads the
// answer to the message numbered last (the request itself, or a batch's
// last change): objects for fn, until the acknowledgement or, for a dump,
// NLMSG_DONE. An error of any message of msgs is returned. what names the
// exchange in errors.
func (c *nfconn) exchange(what string, msgs []byte, last int, dump bool, fn func(nfnl.Message) error) error {
	first := c.seq + 1
	nfnl.NumberMessages(msgs, first)
	c.seq += 64 // more than any batch here holds
	deadline := time.Now().Add(c.wait)
	if err := unix.Sendto(c.fd, msgs, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("%s: send to nf_tables: %w", what, c.timeout(err))
	}
	want := first + uint32(last)
	for done := false; !done; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: nf_tables did not answer within %v", what, c.wait)
		}
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, c.timeout(err))
		}
		err = nfnl.Messages(c.buf[:n], func(m nfnl.Message) error {
			if m.Seq < first || m.Seq > want || done {
				return nil // left over from an exchange abandoned earlier
			}
			var err error
			done, err = answer(m, want, dump, fn)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// answer reads one message of an answer: whether it ends the answer, and
// the kernel's error.
func answer(m nfnl.Message, want uint32, dump bool, fn func(nfnl.Message) error) (bool, error) {
	switch m.Type {
	case unix.NLMSG_DONE:
		if len(m.Data) >= 4 {
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code < 0 {
				return true, unix.Errno(-code)
			}
		}
		return true, nil
	case unix.NLMSG_ERROR:
		errno, _, text := nfnl.ParseError(m)
		if errno != 0 && text != "" {
			return true, fmt.Errorf("%w (%s)", errno, text)
		}
		if errno != 0 {
			return true, errno
		}
		return m.Seq == want && !dump, nil
	}
	if fn == nil {
		return false, nil
	}
	return false, fn(m)
}

// timeout turns the socket's timeout into an error that says how long.
func (c *nfconn) timeout(err error) error {
	if errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("nf_tables did not answer within %v", c.wait)
	}
	return err
}

// batch wraps changes in a transaction, as nf_tables takes them: begin,
// the changes (each asking for an acknowledgement), end. It returns the
// messages and the index of the last change.
func batch(changes ...func(e *nfnl.Encoder)) ([]byte, int) {
	var e nfnl.Encoder
	e.EndMsg(e.BeginMsg(unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES))
	for _, change := range changes {
		change(&e)
	}
	e.EndMsg(e.BeginMsg(unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES))
	return e.Buf, len(changes)
}
