package healthcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// answer is one health check answer as a load balancer sees it.
type answer struct {
	code      int
	weight    string
	service   ServiceName
	endpoints int
	healthy   bool
}

// probe asks http://addr/ with dial, which may dial in a namespace;
// refused reports a closed port.
func probe(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string) (a answer, refused bool) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial}}
	resp, err := client.Get("http://" + addr + "/")
	if errors.Is(err, syscall.ECONNREFUSED) {
		return a, true
	}
	if err != nil {
		t.Fatalf("GET %s: %v", addr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var body struct {
		Service             struct{ Namespace, Name string }
		LocalEndpoints      int
		ServiceProxyHealthy bool
	}
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("GET %s: %d %q: %v", addr, resp.StatusCode, data, err)
	}
	return answer{resp.StatusCode, resp.Header.Get("X-Load-Balancing-Endpoint-Weight"),
		ServiceName{body.Service.Namespace, body.Service.Name}, body.LocalEndpoints, body.ServiceProxyHealthy}, false
}

var plainDial = (&net.Dialer{}).DialContext

// expect checks the answer on addr; want nil means the port refuses.
func expect(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error), what, addr string, want *answer) {
	t.Helper()
	got, refused := probe(t, dial, addr)
	switch {
	case want == nil && !refused:
		t.Errorf("%s: %s answered %+v, want connection refused", what, addr, got)
	case want != nil && refused:
		t.Errorf("%s: %s refused, want %+v", what, addr, *want)
	case want != nil && got != *want:
		t.Errorf("%s: %s answered %+v, want %+v", what, addr, got, *want)
	}
}

func ok(name ServiceName, n int) *answer {
	return &answer{http.StatusOK, fmt.Sprint(n), name, n, true}
}

func unavailable(name ServiceName, n int, healthy bool) *answer {
	return &answer{http.StatusServiceUnavailable, fmt.Sprint(n), name, n, healthy}
}

// freePort is a loopback port that was free a moment ago.
func freePort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// logBuffer collects a logger's text output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServiceServerListeners drives one family's listener set on loopback
// through what a watch sees: Services opened, counts changed, a Service
// removed, a port changed, a port in use and then free, the addresses
// changed, the proxy unhealthy, and the stop.
func TestServiceServerListeners(t *testing.T) {
	clk := newClock()
	h := New(Options{Timeout: time.Minute, Now: clk.now})
	logs := &logBuffer{}
	s := NewServiceServer(h, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer s.Close()
	lo := Listen{IPs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	at := func(ip string, p uint16) string { return netip.AddrPortFrom(netip.MustParseAddr(ip), p).String() }
	a, b, c := ServiceName{"ns", "a"}, ServiceName{"ns", "b"}, ServiceName{"other", "c"}
	p1, p2, p3 := freePort(t), freePort(t), freePort(t)

	s.Sync(nodetable.IPv4, lo, map[ServiceName]ServiceCheck{a: {p1, 1}, b: {p2, 0}})
	expect(t, plainDial, "opened", at("127.0.0.1", p1), ok(a, 1))
	expect(t, plainDial, "opened, no local endpoint", at("127.0.0.1", p2), unavailable(b, 0, true))
	servers := s.families[nodetable.IPv4].services[a].servers

	s.Sync(nodetable.IPv4, lo, map[ServiceName]ServiceCheck{a: {p1, 3}})
	expect(t, plainDial, "count changed", at("127.0.0.1", p1), ok(a, 3))
	expect(t, plainDial, "Service removed", at("127.0.0.1", p2), nil)
	if got := s.families[nodetable.IPv4].services[a].servers; len(got) != 1 || got[0] != servers[0] {
		t.Error("a Service whose port did not change was opened again")
	}

	s.Sync(nodetable.IPv4, lo, map[ServiceName]ServiceCheck{a: {p2, 3}})
	expect(t, plainDial, "port changed: old port", at("127.0.0.1", p1), nil)
	expect(t, plainDial, "port changed: new port", at("127.0.0.1", p2), ok(a, 3))

	// A port in use: logged, the others served, retried at the next Sync.
	busy, err := net.Listen("tcp4", at("127.0.0.1", p3))
	if err != nil {
		t.Fatal(err)
	}
	s.Sync(nodetable.IPv4, lo, map[ServiceName]ServiceCheck{a: {p2, 3}, c: {p3, 1}})
	busy.Close()
	expect(t, plainDial, "beside a port in use", at("127.0.0.1", p2), ok(a, 3))
	if _, open := s.endpoints(nodetable.IPv4, c); open {
		t.Error("a check whose port was in use counts as open")
	}
	if l := logs.String(); !strings.Contains(l, "Failed to start the Service's health check") || !strings.Contains(l, "service=other/c") ||
		!strings.Contains(l, fmt.Sprintf("port=%d", p3)) || !strings.Contains(l, "address already in use") {
		t.Errorf("the failed listen is not logged clearly:\n%s", l)
	}
	s.Sync(nodetable.IPv4, lo, map[ServiceName]ServiceCheck{a: {p2, 3}, c: {p3, 1}})
	expect(t, plainDial, "port free again: retried", at("127.0.0.1", p3), ok(c, 1))

	// New addresses: every check moves.
	lo2 := Listen{IPs: []netip.Addr{netip.MustParseAddr("127.0.0.2")}}
	s.Sync(nodetable.IPv4, lo2, map[ServiceName]ServiceCheck{a: {p2, 3}, c: {p3, 1}})
	expect(t, plainDial, "old address", at("127.0.0.1", p2), nil)
	expect(t, plainDial, "new address", at("127.0.0.2", p2), ok(a, 3))
	expect(t, plainDial, "new address", at("127.0.0.2", p3), ok(c, 1))

	// The proxy unhealthy: 503 with local endpoints.
	h.Queued()
	clk.t = clk.t.Add(time.Minute)
	expect(t, plainDial, "proxy unhealthy", at("127.0.0.2", p2), unavailable(a, 3, false))

	s.Close()
	expect(t, plainDial, "closed", at("127.0.0.2", p2), nil)
	expect(t, plainDial, "closed", at("127.0.0.2", p3), nil)
}

// TestServiceServerFamilies checks kube-proxy's default addresses in a
// node namespace: each family's wildcard, the IPv6 socket IPv6-only, so
// that a dual-stack Service has one check per family on the same port,
// each with its own family's count, and each closes on its own.
func TestServiceServerFamilies(t *testing.T) {
	ns := netlab.New(t, netlab.WithIPv6()).Node()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() error {
			var err error
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	s := NewServiceServer(New(Options{Timeout: time.Minute}), nil)
	defer s.Close()
	svc := ServiceName{"ns", "dual"}
	const p = 30123
	sync := func(f nodetable.Family, checks map[ServiceName]ServiceCheck) {
		if err := ns.Do(func() error { s.Sync(f, Listen{All: true}, checks); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	sync(nodetable.IPv4, map[ServiceName]ServiceCheck{svc: {p, 1}})
	sync(nodetable.IPv6, map[ServiceName]ServiceCheck{svc: {p, 2}})
	expect(t, dial, "IPv4 node IP", "192.168.77.10:30123", ok(svc, 1))
	expect(t, dial, "IPv4 loopback", "127.0.0.1:30123", ok(svc, 1))
	expect(t, dial, "IPv6 node IP", "[fd00:77::10]:30123", ok(svc, 2))
	expect(t, dial, "IPv6 loopback", "[::1]:30123", ok(svc, 2))

	sync(nodetable.IPv6, nil)
	expect(t, dial, "IPv6 closed", "[fd00:77::10]:30123", nil)
	expect(t, dial, "IPv4 still open", "192.168.77.10:30123", ok(svc, 1))
}

// TestServiceServerPartialListen checks that a check that cannot listen
// on one of its addresses is not served on the others either: they are
// closed at once (the port is free again) and the next Sync tries all.
func TestServiceServerPartialListen(t *testing.T) {
	s := NewServiceServer(New(Options{Timeout: time.Minute}), nil)
	defer s.Close()
	p := freePort(t)
	two := Listen{IPs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}}
	busy, err := net.Listen("tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), p).String())
	if err != nil {
		t.Fatal(err)
	}
	name := ServiceName{"ns", "a"}
	s.Sync(nodetable.IPv4, two, map[ServiceName]ServiceCheck{name: {p, 1}})
	first := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p).String()
	// The port must be free at once: nothing else may bind it meanwhile.
	l, err := net.Listen("tcp4", first)
	if err != nil {
		t.Fatalf("%s still bound after the check failed on its other address: %v", first, err)
	}
	l.Close()
	busy.Close()
	s.Sync(nodetable.IPv4, two, map[ServiceName]ServiceCheck{name: {p, 1}})
	expect(t, plainDial, "retried", first, ok(name, 1))
	expect(t, plainDial, "retried", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), p).String(), ok(name, 1))
}
