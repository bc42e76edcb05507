package nftables

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// errDumpInterrupted means the ruleset changed while the kernel dumped it;
// the reader starts over.
var errDumpInterrupted = errors.New("nf_tables dump interrupted by a concurrent change")

// request sends one get request (a dump when dump is set) and calls fn for
// every object in the answer. A get of a missing object returns the
// kernel's error, e.g. ENOENT.
func (c *Conn) request(typ uint16, family byte, dump bool, attrs func(e *nfnl.Encoder), fn func(m nfnl.Message) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	flags := uint16(unix.NLM_F_REQUEST | unix.NLM_F_ACK)
	if dump {
		flags |= unix.NLM_F_DUMP
	}
	var e nfnl.Encoder
	start := e.BeginMsg(nfnl.NFTablesType(typ), flags, family, 0)
	if attrs != nil {
		attrs(&e)
	}
	e.EndMsg(start)
	if e.Err != nil {
		return e.Err
	}
	seq := c.nextSeqs(1)
	nfnl.NumberMessages(e.Buf, seq)
	if err := c.send(e.Buf); err != nil {
		return fmt.Errorf("send request: %w", err)
	}
	return c.readAnswer(seq, dump, fn)
}

// readAnswer reads the answer to request seq: objects, then NLMSG_DONE
// (dump) or an acknowledgement (get). Stray messages of other sequence
// numbers, left over from an abandoned exchange, are skipped.
func (c *Conn) readAnswer(seq uint32, dump bool, fn func(m nfnl.Message) error) error {
	done := false
	var result, interrupted error
	for !done {
		err := c.recv(false, func(m nfnl.Message) error {
			if m.Seq != seq || done {
				return nil
			}
			if m.Flags&unix.NLM_F_DUMP_INTR != 0 {
				interrupted = errDumpInterrupted
			}
			switch m.Type {
			case unix.NLMSG_DONE:
				done = true
				if len(m.Data) >= 4 {
					if code := int32(binary.NativeEndian.Uint32(m.Data)); code < 0 {
						result = &kernelError{errno: unix.Errno(-code)}
					}
				}
			case unix.NLMSG_ERROR:
				errno, _, text := nfnl.ParseError(m)
				if errno != 0 {
					result = &kernelError{errno: errno, text: text}
				}
				// A get is acknowledged after its object; a dump
				// that fails is answered by an error alone.
				done = !dump || errno != 0
			default:
				if result == nil {
					result = fn(m)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
	}
	if result != nil {
		return result
	}
	return interrupted
}

// generation returns nf_tables' ruleset generation ID, which every
// committed transaction in the namespace increments.
func (c *Conn) generation() (uint32, error) {
	var gen uint32
	err := c.request(unix.NFT_MSG_GETGEN, unix.AF_UNSPEC, false, nil, func(m nfnl.Message) error {
		a, err := m.Attrs()
		gen = nfnl.BE32(a[unix.NFTA_GEN_ID])
		return err
	})
	return gen, err
}

// netnsCookie returns the cookie of the network namespace the socket was
// opened in (Linux 5.14+): unlike the namespace's inode number, it is
// never reused for another namespace until the next boot.
func (c *Conn) netnsCookie() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cookie, err := unix.GetsockoptUint64(c.fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("nftables: read network namespace cookie: %w", err)
	}
	return cookie, nil
}
