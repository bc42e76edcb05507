package nftables

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// Socket buffer sizes. The send buffer must hold a whole batch, which goes
// to the kernel in one sendmsg (a transaction cannot span two); Commit
// raises it to the batch's size when that is larger. The receive buffer
// holds the replies to one batch: errors only, plus one acknowledgement.
const (
	defaultSendBuffer = 4 << 20
	receiveBuffer     = 8 << 20
	// recvBufLen is the user-space buffer for one recvmsg. The kernel caps
	// a dump's skb at 32 KiB; a batch error echoes only a header (CAP_ACK).
	recvBufLen = 1 << 20
)

// Conn is a netlink socket of the nf_tables subsystem, bound to the network
// namespace of the thread that opened it for its whole life. It is safe for
// concurrent use; requests are serialised.
type Conn struct {
	mu     sync.Mutex
	fd     int
	sndbuf int
	seq    uint32
	buf    []byte
}

// Open opens a netlink connection to nf_tables in the calling thread's
// network namespace, with large socket buffers (SO_SNDBUFFORCE and
// SO_RCVBUFFORCE, which need CAP_NET_ADMIN; without it the plain options
// apply, capped by net.core.[rw]mem_max).
func Open() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nftables: open netlink socket: %w", err)
	}
	c := &Conn{fd: fd, buf: make([]byte, recvBufLen)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

func (c *Conn) setup() error {
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind netlink socket: %w", err)
	}
	if err := setBuffer(c.fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, receiveBuffer); err != nil {
		return err
	}
	if err := c.growSendBuffer(defaultSendBuffer); err != nil {
		return err
	}
	// Extended acks carry the kernel's error text; capped acks echo only
	// the failing message's header (its sequence number is all we need).
	for _, opt := range []int{unix.NETLINK_EXT_ACK, unix.NETLINK_CAP_ACK} {
		if err := unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, opt, 1); err != nil {
			return fmt.Errorf("set netlink option %d: %w", opt, err)
		}
	}
	return nil
}

// setBuffer sets a socket buffer size with the FORCE option, which ignores
// net.core.[rw]mem_max, falling back to the capped option without
// CAP_NET_ADMIN.
func setBuffer(fd, force, plain, size int) error {
	err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size)
	if errors.Is(err, unix.EPERM) {
		err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
	}
	if err != nil {
		return fmt.Errorf("set socket buffer to %d bytes: %w", size, err)
	}
	return nil
}

// growSendBuffer makes the send buffer hold at least n bytes.
func (c *Conn) growSendBuffer(n int) error {
	if n <= c.sndbuf {
		return nil
	}
	if err := setBuffer(c.fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, n); err != nil {
		return err
	}
	c.sndbuf = n
	return nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// nextSeqs reserves n consecutive sequence numbers and returns the first.
func (c *Conn) nextSeqs(n int) uint32 {
	first := c.seq + 1
	c.seq += uint32(n)
	return first
}

// send writes b, one or more complete netlink messages, in one sendmsg.
func (c *Conn) send(b []byte) error {
	if c.fd < 0 {
		return errors.New("connection is closed")
	}
	if err := c.growSendBuffer(len(b) + 64<<10); err != nil {
		return err
	}
	for {
		err := unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// recv reads one datagram and calls fn for every netlink message in it,
// whose data aliases the receive buffer and is valid only during the
// callback. With dontWait it returns unix.EAGAIN when nothing is queued.
func (c *Conn) recv(dontWait bool, fn func(m nfnl.Message) error) error {
	flags := 0
	if dontWait {
		flags = unix.MSG_DONTWAIT
	}
	var n int
	var err error
	for {
		n, _, err = unix.Recvfrom(c.fd, c.buf, flags)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return err
	}
	return nfnl.Messages(c.buf[:n], fn)
}

// kernelError is an error the kernel returned for one request.
type kernelError struct {
	errno unix.Errno
	text  string // extended-ack text, often empty
}

func (e *kernelError) Error() string {
	if e.text != "" {
		return e.errno.Error() + " (" + e.text + ")"
	}
	return e.errno.Error()
}

func (e *kernelError) Unwrap() error { return e.errno }
