package userspace

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// copyChunk bounds how many bytes one splice loop moves before the byte
// counters are updated; a smaller chunk updates them sooner for the price
// of a few more calls.
const copyChunk = 1 << 20

// acceptBackoff is the pause after a failed accept (EMFILE and the like),
// where v1.25 panicked.
const acceptBackoff = 50 * time.Millisecond

// tcpSocket is a listening TCP proxy socket.
type tcpSocket struct {
	sp *servicePort
	ln *net.TCPListener
}

func (sp *servicePort) listenTCP() (*tcpSocket, error) {
	var ln *net.TCPListener
	err := sp.p.inNS(func() error {
		var err error
		ln, err = net.ListenTCP(listenNetwork("tcp", sp.listen.Addr()), net.TCPAddrFromAddrPort(sp.listen))
		return err
	})
	if err != nil {
		return nil, err
	}
	s := &tcpSocket{sp: sp, ln: ln}
	sp.p.goroutine(s.serve)
	return s, nil
}

func (s *tcpSocket) close() { s.ln.Close() }

// endpointsRemoved leaves TCP connections to removed endpoints open, as
// v1.25 did: they end when either side closes.
func (s *tcpSocket) endpointsRemoved([]netip.AddrPort) {}

func (s *tcpSocket) serve() {
	for {
		c, err := s.ln.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			s.sp.stats.fail(errAccept)
			s.sp.log.Error("accept failed", "err", err)
			time.Sleep(acceptBackoff)
			continue
		}
		s.sp.stats.connections.Inc()
		s.sp.p.goroutine(func() { s.sp.handleTCP(c) })
	}
}

// tcpSession is one proxied TCP connection.
type tcpSession struct {
	mu      sync.Mutex
	in, out *net.TCPConn // out is nil until the dial succeeds
	closed  bool
}

// setOut records the backend connection; false if the session was closed
// meanwhile.
func (s *tcpSession) setOut(out *net.TCPConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out = out
	return !s.closed
}

// close ends both sides at once, as when the Service port is removed.
func (s *tcpSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.in.Close()
	if s.out != nil {
		s.out.Close()
	}
}

// handleTCP connects an accepted client to an endpoint and copies bytes
// both ways until both sides have closed.
func (sp *servicePort) handleTCP(in *net.TCPConn) {
	sp.stats.active.Inc()
	defer sp.stats.active.Dec()
	s := &tcpSession{in: in}
	if !sp.track(s) {
		in.Close()
		return
	}
	defer sp.untrack(s)
	client := in.RemoteAddr().(*net.TCPAddr).AddrPort()
	c, ep, err := sp.dial("tcp", client.Addr().Unmap())
	if err != nil {
		sp.log.Log(sp.ctx, levelFor(err), "cannot connect the client to an endpoint: resetting it", "client", client, "err", err)
		// A reset rather than a FIN: the client must not take an
		// empty stream for a complete answer.
		in.SetLinger(0)
		in.Close()
		return
	}
	out := c.(*net.TCPConn)
	if !s.setOut(out) {
		out.Close()
		return
	}
	sp.log.Log(sp.ctx, LevelConn, "proxying", "client", client, "endpoint", ep)
	sp.pipe(in, out)
}

// levelFor logs a connection without endpoints at the connection level (it
// is the expected state of such a Service) and other failures as warnings.
func levelFor(err error) slog.Level {
	if errors.Is(err, ErrNoEndpoints) {
		return LevelConn
	}
	return slog.LevelWarn
}

// pipe copies in to out and out to in. A FIN from one side is passed on to
// the other as a half-close (CloseWrite), and the connection lives until
// both directions have ended; a reset or error on either side resets both.
func (sp *servicePort) pipe(in, out *net.TCPConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sp.copyHalf(out, in, sp.stats.bytesIn)
	}()
	sp.copyHalf(in, out, sp.stats.bytesOut)
	<-done
	in.Close()
	out.Close()
}

// copyHalf copies src to dst until src's EOF, then half-closes dst.
func (sp *servicePort) copyHalf(dst, src *net.TCPConn, counter prometheus.Counter) {
	err := copyCounting(dst, src, counter)
	if err == nil {
		dst.CloseWrite()
		return
	}
	if !errors.Is(err, net.ErrClosed) {
		sp.stats.fail(errCopy)
		sp.log.Log(sp.ctx, LevelConn, "connection broken", "from", src.RemoteAddr(), "to", dst.RemoteAddr(), "err", err)
	}
	dst.SetLinger(0)
	src.SetLinger(0)
	dst.Close()
	src.Close()
}

// copyCounting copies src to dst until EOF (nil error) or an error, adding
// to counter as it goes. io.CopyN between two *net.TCPConn splices in the
// kernel, so the bytes never enter user space; the chunks only bound how
// stale the counter may be.
func copyCounting(dst, src *net.TCPConn, counter prometheus.Counter) error {
	for {
		n, err := io.CopyN(dst, src, copyChunk)
		counter.Add(float64(n))
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}
