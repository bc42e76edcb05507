package userspace_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	proxy "github.com/kubectl-svcproxy/kubectl-svcproxy/proxy/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// These tests run the proxy on the loopback of the test's own network
// namespace: every 127.0.0.0/8 address is local there, so each backend
// gets its own address and a client picks its source address to act as a
// distinct client IP. Ports are the kernel's free ephemeral ports.

// loopback returns 127.0.0.n.
func loopback(n byte) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, n}) }

// freePort returns a port that is free on 127.0.0.1 for proto right now.
func freePort(t testing.TB, proto string) uint16 {
	t.Helper()
	if proto == "udp" {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort().Port()
}

// tcpBackend listens on addr (port 0: any) and, for every connection,
// writes "<name>\n" and then echoes what it reads until EOF, then closes.
func tcpBackend(t testing.TB, addr netip.AddrPort, name string) netip.AddrPort {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte(name + "\n"))
				io.Copy(c, c)
				c.CloseWrite()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// udpBackend answers every datagram with "<name> <payload>".
func udpBackend(t testing.TB, addr netip.AddrPort, name string) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			c.WriteToUDPAddrPort(append([]byte(name+" "), buf[:n]...), from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// svcPort is a Service port of namespace "default" with a free proxy port.
func svcPort(t testing.TB, name string, proto nodetable.Protocol, eps ...netip.AddrPort) userspace.Port {
	return userspace.Port{
		Name:      nodetable.ServicePortName{Namespace: "default", Name: name, Port: "p", Protocol: proto},
		Portal:    netip.MustParseAddrPort("10.96.0.1:80"),
		ProxyPort: freePort(t, strings.ToLower(string(proto))),
		Endpoints: eps,
	}
}

// ruleset is an IPv4 ruleset listening on 127.0.0.1.
func ruleset(ports ...userspace.Port) []*userspace.Ruleset {
	return []*userspace.Ruleset{{Family: nodetable.IPv4, ListenIP: loopback(1), Ports: ports}}
}

// proxyAddr is where the proxy listens for p.
func proxyAddr(p userspace.Port) netip.AddrPort { return netip.AddrPortFrom(loopback(1), p.ProxyPort) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProxier runs a Proxier until the test ends and logs its output on
// failure.
func startProxier(t testing.TB, opts proxy.Options, rs []*userspace.Ruleset) *proxy.Proxier {
	t.Helper()
	logs := &syncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: proxy.LevelConn}))
	p := proxy.New(opts)
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("proxier log:\n%s", logs)
		}
	})
	if err := p.Update(rs); err != nil {
		t.Fatal(err)
	}
	return p
}

// dialFrom connects from the source address src to dst and returns the
// connection and the first line the backend sent: its name.
func dialFrom(src netip.Addr, dst netip.AddrPort) (*net.TCPConn, string, error) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
	c, err := d.Dial("tcp4", dst.String())
	if err != nil {
		return nil, "", err
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		c.Close()
		return nil, "", fmt.Errorf("read the backend's name: %w", err)
	}
	return c.(*net.TCPConn), strings.TrimSpace(line), nil
}

// names opens n connections from src to dst and counts the backends.
func names(t *testing.T, src netip.Addr, dst netip.AddrPort, n int) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for i := range n {
		c, name, err := dialFrom(src, dst)
		if err != nil {
			t.Fatalf("connection %d of %d to %s: %v (so far %v)", i+1, n, dst, err, counts)
		}
		c.Close()
		counts[name]++
	}
	return counts
}

// udpAsk sends payload from a new socket and returns the reply.
func udpAsk(c *net.UDPConn, payload string) (string, error) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(payload)); err != nil {
		return "", err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// metric returns the value of the series of name whose labels include
// every one of labels (`a="x",b="y"`), read from the proxier's /metrics
// handler; -1 if there is none.
func metric(t testing.TB, p *proxy.Proxier, name, labels string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	p.Metrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	var want []string
	if labels != "" {
		want = strings.Split(labels, ",")
	}
	for line := range strings.Lines(rec.Body.String()) {
		series, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		base, have, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
		if !ok || base != name {
			continue
		}
		haveSet := strings.Split(have, ",")
		if slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(haveSet, l) }) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		return v
	}
	return -1
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isRefused reports ECONNREFUSED.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
