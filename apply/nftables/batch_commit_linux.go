package nftables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// commitWait bounds the wait for the kernel's answer once the batch is
// sent. The kernel processes a batch inside sendmsg, so the answer is
// normally queued before sendmsg returns.
const commitWait = 5 * time.Second

// TransactionError is a transaction the kernel refused. The kernel then
// changed nothing: it applies a batch entirely or not at all.
type TransactionError struct {
	Family, Table string
	// Failures are the refused operations, in batch order, each naming
	// the object ("add rule to chain \"services\": ...") and the errno.
	Failures []error
}

func (e *TransactionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nftables: transaction on table %s %s failed, nothing was applied: ", e.Family, e.Table)
	for i, f := range e.Failures {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failures)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is access to the errnos.
func (e *TransactionError) Unwrap() []error { return e.Failures }

// opError is one refused operation.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// Commit sends the batch as one transaction and waits for the kernel's
// verdict. On failure nothing was applied and the error (a
// *TransactionError when the kernel refused) names the failing
// operations. An empty batch commits nothing. The batch is spent
// afterwards.
func (b *Batch) Commit() error {
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return nil
	}
	// Only the last message asks for an acknowledgement: the kernel
	// reports every failing message anyway, and a batch of 100k
	// acknowledgements would overflow the receive buffer (ENOBUFS).
	flagsAt := b.lastMsg + 6
	binary.NativeEndian.PutUint16(b.enc.Buf[flagsAt:], binary.NativeEndian.Uint16(b.enc.Buf[flagsAt:])|unix.NLM_F_ACK)
	end := b.enc.BeginMsg(unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)
	b.enc.EndMsg(end)
	buf, ops := b.enc.Buf, b.ops
	b.enc.Buf, b.ops = nil, nil
	b.err = errors.New("nftables: batch already committed")

	c := b.conn
	c.mu.Lock()
	defer c.mu.Unlock()
	// Sequence numbers: the batch begin, one per operation, the batch end.
	first := c.nextSeqs(len(ops) + 2)
	nfnl.NumberMessages(buf, first)
	if err := c.send(buf); err != nil {
		return fmt.Errorf("nftables: send transaction on table %s %s (%d messages, %d bytes): %w",
			b.family, b.table, len(ops)+2, len(buf), err)
	}
	return b.collect(first, ops)
}

// collect reads the kernel's answer to the batch: an error for every
// refused message (or for the batch begin when the commit itself failed),
// then the acknowledgement of the last message.
func (b *Batch) collect(first uint32, ops []batchOp) error {
	c := b.conn
	last := first + uint32(len(ops))
	describe := func(seq uint32) string {
		if seq == first {
			return "commit"
		}
		return ops[seq-first-1].String()
	}
	var failures []error
	acked, batchFailed := false, false
	deadline := time.Now().Add(commitWait)
	for !acked {
		err := c.recv(true, func(m nfnl.Message) error {
			if m.Type != unix.NLMSG_ERROR {
				return nil
			}
			errno, seq, text := nfnl.ParseError(m)
			if seq < first || seq > last {
				return nil // a stray answer to an earlier exchange
			}
			if errno != 0 {
				failures = append(failures, &opError{op: describe(seq), err: &kernelError{errno: errno, text: text}})
				batchFailed = batchFailed || seq == first
			}
			acked = acked || seq == last
			return nil
		})
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN):
			if batchFailed {
				acked = true // no acknowledgement follows a batch-level error
			} else if !c.wait(deadline) {
				return fmt.Errorf("nftables: transaction on table %s %s: no answer from the kernel within %v", b.family, b.table, commitWait)
			}
		case errors.Is(err, unix.ENOBUFS):
			return fmt.Errorf("nftables: transaction on table %s %s: the kernel's answer overflowed the receive buffer; its outcome is unknown: %w", b.family, b.table, err)
		default:
			return fmt.Errorf("nftables: transaction on table %s %s: receive: %w", b.family, b.table, err)
		}
	}
	if len(failures) > 0 {
		return &TransactionError{Family: string(b.family), Table: b.table, Failures: failures}
	}
	return nil
}

// wait blocks until the socket is readable or the deadline passes.
func (c *Conn) wait(deadline time.Time) bool {
	ms := int(time.Until(deadline) / time.Millisecond)
	if ms <= 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, ms)
	return n > 0 || errors.Is(err, unix.EINTR)
}
