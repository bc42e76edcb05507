package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Reply is what a backend started by Serve answered.
type Reply struct {
	// Backend is the name the backend serves, e.g. the pod's name.
	Backend string
	// Source is the client address the backend saw: the prober's own
	// address, or the address it was SNATed to.
	Source netip.AddrPort
}

// conn is what a probe reads from: a net.Conn or an *os.File (SCTP).
type conn interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
}

// Probe opens one connection (TCP, SCTP) or sends one datagram (UDP) from
// the namespace to dst and reads the backend's reply, all within timeout.
// src, if valid, is bound as the source address. Classify errors with
// IsRefused, IsTimeout, IsUnreachable and IsUnsupported.
func (ns NS) Probe(ctx context.Context, proto Proto, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (Reply, error) {
	return ns.probeHolding(ctx, proto, src, dst, timeout, nil)
}

// probeHolding is Probe that, when held is not nil, leaves the socket open
// and appends it to *held for the caller to close.
func (ns NS) probeHolding(ctx context.Context, proto Proto, src netip.Addr, dst netip.AddrPort, timeout time.Duration, held *[]conn) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := ns.probe(ctx, proto, src, dst, held)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", err, cerr)
		}
		from := ""
		if src.IsValid() {
			from = " from " + src.String()
		}
		return Reply{}, fmt.Errorf("netlab: %s probe to %s%s in %s: %w", proto, dst, from, ns.Name(), err)
	}
	return r, nil
}

func (ns NS) probe(ctx context.Context, proto Proto, src netip.Addr, dst netip.AddrPort, held *[]conn) (Reply, error) {
	c, err := ns.open(ctx, proto, src, dst)
	if err != nil {
		return Reply{}, err
	}
	if held == nil {
		defer c.Close()
	} else {
		*held = append(*held, c)
	}
	return exchange(ctx, proto, c)
}

// open is the package's open run in the namespace.
func (ns NS) open(ctx context.Context, proto Proto, src netip.Addr, dst netip.AddrPort) (conn, error) {
	var c conn
	err := ns.Do(func() error {
		var err error
		c, err = open(ctx, proto, src, dst)
		return err
	})
	return c, err
}

// exchange sends a UDP probe, or waits for a stream to connect, and reads
// the backend's reply before ctx ends.
func exchange(ctx context.Context, proto Proto, c conn) (Reply, error) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var data []byte
	switch proto {
	case UDP:
		if _, err := c.Write([]byte("probe\n")); err != nil {
			return Reply{}, err
		}
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			return Reply{}, err
		}
		data = buf[:n]
	default:
		if f, ok := c.(*os.File); ok {
			if err := waitConnected(f); err != nil {
				return Reply{}, err
			}
		}
		var err error
		if data, err = io.ReadAll(io.LimitReader(c, 512)); err != nil {
			return Reply{}, err
		}
	}
	return parseReply(data)
}

// open creates the socket in the calling thread's namespace. TCP and UDP
// are connected on return; SCTP is still connecting.
func open(ctx context.Context, proto Proto, src netip.Addr, dst netip.AddrPort) (conn, error) {
	network := string(proto) + "4"
	if dst.Addr().Unmap().Is6() {
		network = string(proto) + "6"
	}
	var d net.Dialer
	switch proto {
	case TCP:
		if src.IsValid() {
			d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
		}
	case UDP:
		if src.IsValid() {
			d.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
		}
	case SCTP:
		return dialStream(unix.IPPROTO_SCTP, src, dst)
	default:
		return nil, fmt.Errorf("unknown protocol %q", proto)
	}
	c, err := d.DialContext(ctx, network, dst.String())
	if err != nil {
		return nil, err
	}
	return c, nil
}

func parseReply(data []byte) (Reply, error) {
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return Reply{}, fmt.Errorf("unexpected reply %q", data)
	}
	src, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return Reply{}, fmt.Errorf("unexpected reply %q: %w", data, err)
	}
	return Reply{Backend: f[0], Source: src}, nil
}

// DialTCP connects to dst and returns the name of the backend that
// answered.
func (ns NS) DialTCP(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (string, error) {
	r, err := ns.Probe(ctx, TCP, netip.Addr{}, dst, timeout)
	return r.Backend, err
}

// DialTCPFrom is DialTCP from the local address src, e.g. NodeIP or
// 127.0.0.1 on the node.
func (ns NS) DialTCPFrom(ctx context.Context, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (string, error) {
	r, err := ns.Probe(ctx, TCP, src, dst, timeout)
	return r.Backend, err
}

// DialUDP sends one datagram to dst on a connected socket and returns the
// name in the reply. An ICMP port unreachable makes IsRefused true.
func (ns NS) DialUDP(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (string, error) {
	r, err := ns.Probe(ctx, UDP, netip.Addr{}, dst, timeout)
	return r.Backend, err
}

// DialSCTP is DialTCP over SCTP; IsUnsupported(err) is true where the
// kernel has no SCTP.
func (ns NS) DialSCTP(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (string, error) {
	r, err := ns.Probe(ctx, SCTP, netip.Addr{}, dst, timeout)
	return r.Backend, err
}

// Spread probes dst n times, each from a new socket (a new source port and
// so a new conntrack entry), and counts the replies by backend. It stops at
// the first failure and returns the counts so far with the error.
//
// Every UDP socket stays open until Spread returns. A closed UDP socket's
// port is free for the next one at once, and a datagram from a port used a
// moment ago is the same flow: the same conntrack entry, and, to a
// userspace proxy, the same client (within its 250 ms idle timeout). Such
// a reuse, about once in a hundred runs, sent two probes to one backend.
// TCP sockets close as in Probe, so that open connections never weigh on a
// least-connection scheduler.
func (ns NS) Spread(ctx context.Context, proto Proto, dst netip.AddrPort, n int) (map[string]int, error) {
	counts := map[string]int{}
	var held []conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hold := &held
	if proto != UDP {
		hold = nil
	}
	for i := range n {
		r, err := ns.probeHolding(ctx, proto, netip.Addr{}, dst, DefaultTimeout, hold)
		if err != nil {
			return counts, fmt.Errorf("attempt %d of %d: %w", i+1, n, err)
		}
		counts[r.Backend]++
	}
	return counts, nil
}

// IsRefused reports a TCP reset, an SCTP abort, or an ICMP port
// unreachable (what REJECT sends by default): ECONNREFUSED.
func IsRefused(err error) bool { return errors.Is(err, unix.ECONNREFUSED) }

// IsTimeout reports that no answer came in time: the packets were dropped
// or went nowhere. A cancelled context is not a timeout.
func IsTimeout(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// IsUnreachable reports an ICMP host or network unreachable, or no route.
func IsUnreachable(err error) bool {
	return errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.ENETUNREACH)
}

// IsUnsupported reports that the kernel lacks what was asked, e.g. SCTP.
func IsUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
