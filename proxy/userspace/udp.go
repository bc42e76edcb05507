package userspace

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxDatagram is the largest UDP payload; v1.25's 4 KiB buffer truncated
// larger datagrams.
const maxDatagram = 64 << 10

// udpSocket is a UDP proxy socket and its flows, one per client address,
// each with its own connected socket to one endpoint (v1.25's ClientCache).
type udpSocket struct {
	sp   *servicePort
	conn *net.UDPConn
	idle time.Duration

	mu     sync.Mutex
	flows  map[netip.AddrPort]*udpFlow
	closed bool
}

// udpFlow is one client's datagrams to one endpoint.
type udpFlow struct {
	client   netip.AddrPort
	endpoint netip.AddrPort
	backend  *net.UDPConn
	// oob makes replies leave from the address the client's datagram was
	// sent to after the portal's NAT, so that conntrack maps them back to
	// the Service address the client expects (see pktinfo.go).
	oob        []byte
	lastActive atomic.Int64 // unix nanoseconds
}

func (f *udpFlow) touch() { f.lastActive.Store(time.Now().UnixNano()) }

func (f *udpFlow) idleFor() time.Duration { return time.Since(time.Unix(0, f.lastActive.Load())) }

func (sp *servicePort) listenUDP() (*udpSocket, error) {
	var conn *net.UDPConn
	err := sp.p.inNS(func() error {
		var err error
		conn, err = net.ListenUDP(listenNetwork("udp", sp.listen.Addr()), net.UDPAddrFromAddrPort(sp.listen))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := enablePktinfo(conn, sp.listen.Addr().Is6()); err != nil {
		conn.Close()
		return nil, err
	}
	s := &udpSocket{sp: sp, conn: conn, idle: sp.p.opts.UDPIdleTimeout, flows: map[netip.AddrPort]*udpFlow{}}
	sp.p.goroutine(s.serve)
	return s, nil
}

// close closes the socket and ends every flow.
func (s *udpSocket) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.conn.Close()
	for k, f := range s.flows {
		f.backend.Close()
		delete(s.flows, k)
	}
}

// endpointsRemoved ends the flows to removed endpoints: the client's next
// datagram starts a flow to a live one.
func (s *udpSocket) endpointsRemoved(eps []netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, f := range s.flows {
		if slices.Contains(eps, f.endpoint) {
			f.backend.Close()
			delete(s.flows, k)
		}
	}
}

// serve reads the clients' datagrams and sends each on its flow.
func (s *udpSocket) serve() {
	buf := make([]byte, maxDatagram)
	oob := make([]byte, 128)
	for {
		n, oobn, _, from, err := s.conn.ReadMsgUDPAddrPort(buf, oob)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			s.sp.stats.fail(errAccept)
			s.sp.log.Error("read failed", "err", err)
			time.Sleep(acceptBackoff)
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		f, err := s.flow(from, oob[:oobn])
		if err != nil {
			continue
		}
		if _, err := f.backend.Write(buf[:n]); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.sp.stats.fail(errCopy)
				s.sp.log.Log(s.sp.ctx, LevelConn, "write to endpoint failed", "client", from, "endpoint", f.endpoint, "err", err)
			}
			continue
		}
		s.sp.stats.bytesIn.Add(float64(n))
	}
}

// flow returns the client's flow, starting one if there is none.
func (s *udpSocket) flow(client netip.AddrPort, oob []byte) (*udpFlow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.flows[client]; ok {
		// Touched under the lock: an idle check that holds it next
		// sees this datagram (see stillActive).
		f.touch()
		return f, nil
	}
	if s.closed {
		return nil, net.ErrClosed
	}
	c, ep, err := s.sp.dial("udp", client.Addr())
	if err != nil {
		s.sp.log.Log(s.sp.ctx, levelFor(err), "cannot start a UDP flow: dropping the datagram", "client", client, "err", err)
		return nil, err
	}
	f := &udpFlow{client: client, endpoint: ep, backend: c.(*net.UDPConn), oob: replyPktinfo(oob, s.sp.listen.Addr())}
	f.touch()
	s.flows[client] = f
	s.sp.stats.connections.Inc()
	s.sp.stats.active.Inc()
	s.sp.log.Log(s.sp.ctx, LevelConn, "new UDP flow", "client", client, "endpoint", ep)
	s.sp.p.goroutine(func() { s.replies(f) })
	return f, nil
}

// replies sends the endpoint's datagrams back to the client until the flow
// has been idle for the timeout, the endpoint refuses, or the flow is
// closed.
func (s *udpSocket) replies(f *udpFlow) {
	defer s.sp.stats.active.Dec()
	defer f.backend.Close()
	buf := make([]byte, maxDatagram)
	for {
		f.backend.SetReadDeadline(time.Unix(0, f.lastActive.Load()).Add(s.idle))
		n, err := f.backend.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if s.stillActive(f) {
				continue
			}
			s.sp.log.Log(s.sp.ctx, LevelConn, "UDP flow idle: closed", "client", f.client, "endpoint", f.endpoint)
			return
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				// ECONNREFUSED: the endpoint sent an ICMP port unreachable.
				s.sp.stats.fail(errCopy)
				s.sp.log.Log(s.sp.ctx, LevelConn, "UDP flow ended", "client", f.client, "endpoint", f.endpoint, "err", err)
			}
			s.remove(f)
			return
		}
		f.touch()
		if _, _, err := s.conn.WriteMsgUDPAddrPort(buf[:n], f.oob, f.client); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.sp.stats.fail(errCopy)
				s.sp.log.Log(s.sp.ctx, LevelConn, "reply to client failed", "client", f.client, "err", err)
			}
			continue
		}
		s.sp.stats.bytesOut.Add(float64(n))
	}
}

// stillActive reports whether the flow saw a datagram within the idle
// timeout; if not, it removes the flow, so that the client's next datagram
// starts a new one.
func (s *udpSocket) stillActive(f *udpFlow) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.idleFor() < s.idle {
		return true
	}
	if s.flows[f.client] == f {
		delete(s.flows, f.client)
	}
	return false
}

func (s *udpSocket) remove(f *udpFlow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flows[f.client] == f {
		delete(s.flows, f.client)
	}
}
