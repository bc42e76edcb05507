package userspace_test

import (
	"context"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	proxy "github.com/kubectl-svcproxy/kubectl-svcproxy/proxy/userspace"
)

func TestTCPRoundRobinAndAffinity(t *testing.T) {
	a := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	b := tcpBackend(t, netip.AddrPortFrom(loopback(12), 0), "b")
	c := tcpBackend(t, netip.AddrPortFrom(loopback(13), 0), "c")
	rr := svcPort(t, "rr", nodetable.TCP, a, b, c)
	sticky := svcPort(t, "sticky", nodetable.TCP, a, b, c)
	sticky.AffinityTimeoutSeconds = 60
	p := startProxier(t, proxy.Options{}, ruleset(rr, sticky))

	// Round robin: 30 connections, 10 each, even from one client.
	counts := names(t, loopback(2), proxyAddr(rr), 30)
	if len(counts) != 3 || counts["a"] != 10 || counts["b"] != 10 || counts["c"] != 10 {
		t.Fatalf("round robin over 3 endpoints gave %v, want 10 each", counts)
	}
	// Affinity: each client IP sticks to one endpoint; clients differ.
	seen := map[string]bool{}
	for _, client := range []netip.Addr{loopback(2), loopback(3), loopback(4)} {
		counts := names(t, client, proxyAddr(sticky), 10)
		if len(counts) != 1 {
			t.Fatalf("client %s with ClientIP affinity reached %v, want one endpoint", client, counts)
		}
		for n := range counts {
			seen[n] = true
		}
	}
	if len(seen) != 3 {
		t.Errorf("three new clients were spread over %v; the first pick of each should take its turn", slices.Collect(maps.Keys(seen)))
	}
	const labels = `service_port="default/rr:p",protocol="tcp",family="IPv4"`
	eventually(t, "active connections drop to 0", func() bool { return metric(t, p, "svcproxy_userspace_active_connections", labels) == 0 })
	if got := metric(t, p, "svcproxy_userspace_connections_total", labels); got != 30 {
		t.Errorf("connections_total = %v, want 30", got)
	}
	// Every backend wrote "x\n": 2 bytes each, out to the client.
	if got := metric(t, p, "svcproxy_userspace_bytes_total", labels+`,direction="out"`); got != 60 {
		t.Errorf("bytes out = %v, want 60", got)
	}
}

func TestTCPRefusingEndpointIsSkipped(t *testing.T) {
	good := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "good")
	refusing := netip.AddrPortFrom(loopback(12), freePort(t, "tcp")) // nothing listens: RST
	sp := svcPort(t, "svc", nodetable.TCP, good, refusing)
	p := startProxier(t, proxy.Options{}, ruleset(sp))
	counts := names(t, loopback(2), proxyAddr(sp), 20)
	if counts["good"] != 20 {
		t.Fatalf("got %v; every connection must reach the good endpoint", counts)
	}
	labels := `service_port="default/svc:p",protocol="tcp",family="IPv4",reason=`
	// As in v1.25, the retry takes the good endpoint's turn, so the next
	// connection starts at the refusing one again: all but perhaps the
	// first connection try it first.
	if got := metric(t, p, "svcproxy_userspace_errors_total", labels+`"dial"`); got < 19 || got > 20 {
		t.Errorf("dial errors = %v, want 19 or 20", got)
	}
	if got := metric(t, p, "svcproxy_userspace_errors_total", labels+`"connect"`); got != 0 {
		t.Errorf("connect errors = %v, want 0", got)
	}
}

func TestTCPAllEndpointsRefusingResetsClient(t *testing.T) {
	refusing := netip.AddrPortFrom(loopback(12), freePort(t, "tcp"))
	sp := svcPort(t, "svc", nodetable.TCP, refusing)
	p := startProxier(t, proxy.Options{DialTimeouts: []time.Duration{time.Second, time.Second}}, ruleset(sp))
	_, _, err := dialFrom(loopback(2), proxyAddr(sp))
	if err == nil {
		t.Fatal("a connection through a Service whose only endpoint refuses was answered")
	}
	if !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("want a reset, got %v", err)
	}
	labels := `service_port="default/svc:p",protocol="tcp",family="IPv4",reason=`
	if d, c := metric(t, p, "svcproxy_userspace_errors_total", labels+`"dial"`), metric(t, p, "svcproxy_userspace_errors_total", labels+`"connect"`); d != 2 || c != 1 {
		t.Errorf("dial errors %v, connect errors %v; want 2 and 1", d, c)
	}
}

func TestNoEndpointsRefuses(t *testing.T) {
	a := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	ua := udpBackend(t, netip.AddrPortFrom(loopback(11), 0), "ua")
	tcp := svcPort(t, "svc", nodetable.TCP, a)
	udp := svcPort(t, "dns", nodetable.UDP, ua)
	p := startProxier(t, proxy.Options{}, ruleset(tcp, udp))
	names(t, loopback(2), proxyAddr(tcp), 1)

	tcp.Endpoints, udp.Endpoints = nil, nil
	if err := p.Update(ruleset(tcp, udp)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dialFrom(loopback(2), proxyAddr(tcp)); !isRefused(err) {
		t.Fatalf("TCP to a Service port without endpoints: got %v, want connection refused", err)
	}
	uc, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(proxyAddr(udp)))
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	if _, err := udpAsk(uc, "x"); !isRefused(err) {
		t.Fatalf("UDP to a Service port without endpoints: got %v, want connection refused (ICMP port unreachable)", err)
	}

	// Endpoints back: the same proxy port answers again.
	tcp.Endpoints, udp.Endpoints = []netip.AddrPort{a}, []netip.AddrPort{ua}
	if err := p.Update(ruleset(tcp, udp)); err != nil {
		t.Fatal(err)
	}
	names(t, loopback(2), proxyAddr(tcp), 1)
	uc2, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(proxyAddr(udp)))
	if err != nil {
		t.Fatal(err)
	}
	defer uc2.Close()
	if got, err := udpAsk(uc2, "x"); err != nil || got != "ua x" {
		t.Fatalf("UDP after endpoints came back: %q, %v", got, err)
	}
}

func TestTCPHalfClose(t *testing.T) {
	a := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	sp := svcPort(t, "svc", nodetable.TCP, a)
	p := startProxier(t, proxy.Options{}, ruleset(sp))
	c, name, err := dialFrom(loopback(2), proxyAddr(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload := strings.Repeat("0123456789", 100_000) // 1 MB
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	// The backend echoes until it sees our FIN, then closes: the echo can
	// only complete if the half-close went through and the other
	// direction stayed open.
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	echo, err := io.ReadAll(c)
	if err != nil || name != "a" || string(echo) != payload {
		t.Fatalf("half-close: backend %q, read %d bytes (want %d), err %v", name, len(echo), len(payload), err)
	}
	labels := `service_port="default/svc:p",protocol="tcp",family="IPv4",direction=`
	eventually(t, "byte counters settle", func() bool {
		return metric(t, p, "svcproxy_userspace_bytes_total", labels+`"in"`) == float64(len(payload)) &&
			metric(t, p, "svcproxy_userspace_bytes_total", labels+`"out"`) == float64(len(payload)+2)
	})
}

func TestUpdateKeepsUnchangedAndClosesRemoved(t *testing.T) {
	a := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	b := tcpBackend(t, netip.AddrPortFrom(loopback(12), 0), "b")
	keep := svcPort(t, "keep", nodetable.TCP, a)
	gone := svcPort(t, "gone", nodetable.TCP, a)
	p := startProxier(t, proxy.Options{}, ruleset(keep, gone))

	kc, _, err := dialFrom(loopback(2), proxyAddr(keep))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	gc, _, err := dialFrom(loopback(2), proxyAddr(gone))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()

	// keep gains endpoint b, gone is removed, added is new.
	keep.Endpoints = []netip.AddrPort{a, b}
	added := svcPort(t, "added", nodetable.TCP, b)
	if err := p.Update(ruleset(keep, added)); err != nil {
		t.Fatal(err)
	}
	// The removed port's connection is closed by the proxy...
	gc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := gc.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the removed Service port's connection is still open (read %d bytes)", n)
	}
	if _, _, err := dialFrom(loopback(2), proxyAddr(gone)); !isRefused(err) {
		t.Fatalf("the removed Service port still accepts: %v", err)
	}
	// ...while the unchanged port's connection still carries data.
	if _, err := kc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(kc, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("the kept connection broke on Update: %q, %v", buf, err)
	}
	if counts := names(t, loopback(2), proxyAddr(keep), 10); counts["a"] != 5 || counts["b"] != 5 {
		t.Fatalf("keep after gaining an endpoint: %v, want a and b 5 each", counts)
	}
	if counts := names(t, loopback(2), proxyAddr(added), 2); counts["b"] != 2 {
		t.Fatalf("added: %v", counts)
	}
	if got := metric(t, p, "svcproxy_userspace_connections_total", `service_port="default/gone:p"`); got != -1 {
		t.Errorf("the removed port's metrics are still exported (%v)", got)
	}
}

func TestUDPFlows(t *testing.T) {
	a := udpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	b := udpBackend(t, netip.AddrPortFrom(loopback(12), 0), "b")
	sp := svcPort(t, "dns", nodetable.UDP, a, b)
	const idle = 200 * time.Millisecond
	p := startProxier(t, proxy.Options{UDPIdleTimeout: idle}, ruleset(sp))
	const labels = `service_port="default/dns:p",protocol="udp",family="IPv4"`

	// One client socket is one flow: all its datagrams reach one endpoint.
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(proxyAddr(sp)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := ""
	for i := range 5 {
		got, err := udpAsk(c, "q")
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if first == "" {
			first = got
		}
		if got != first {
			t.Fatalf("one flow reached two endpoints: %q then %q", first, got)
		}
	}
	if got := metric(t, p, "svcproxy_userspace_active_connections", labels); got != 1 {
		t.Fatalf("active flows = %v, want 1", got)
	}
	// Idle for longer than the timeout: the flow ends, and the next
	// datagram starts a new one with the next endpoint.
	eventually(t, "the idle flow closes", func() bool {
		return metric(t, p, "svcproxy_userspace_active_connections", labels) == 0
	})
	got, err := udpAsk(c, "q")
	if err != nil || got == first {
		t.Fatalf("after the idle timeout: %q, %v; want the other endpoint than %q", got, err, first)
	}
	// Different clients spread. Each socket stays open until the test ends:
	// a closed one's port could come back to the next client, which would
	// then be the same flow to the proxy.
	counts := map[string]int{}
	for range 10 {
		uc, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(proxyAddr(sp)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { uc.Close() })
		got, err := udpAsk(uc, "q")
		if err != nil {
			t.Fatal(err)
		}
		counts[got]++
	}
	if counts["a q"] != 5 || counts["b q"] != 5 {
		t.Fatalf("10 UDP clients: %v, want 5 each", counts)
	}
	if got := metric(t, p, "svcproxy_userspace_connections_total", labels); got != 12 {
		t.Errorf("flows started = %v, want 12", got)
	}
}

func TestUDPRemovedEndpointEndsFlow(t *testing.T) {
	a := udpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	b := udpBackend(t, netip.AddrPortFrom(loopback(12), 0), "b")
	sp := svcPort(t, "dns", nodetable.UDP, a, b)
	p := startProxier(t, proxy.Options{UDPIdleTimeout: time.Minute}, ruleset(sp))
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(proxyAddr(sp)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := udpAsk(c, "q")
	if err != nil {
		t.Fatal(err)
	}
	keep := b
	if got == "b q" {
		keep = a
	}
	sp.Endpoints = []netip.AddrPort{keep}
	if err := p.Update(ruleset(sp)); err != nil {
		t.Fatal(err)
	}
	again, err := udpAsk(c, "q")
	if err != nil || again == got {
		t.Fatalf("the flow to a removed endpoint went on: %q then %q (%v)", got, again, err)
	}
}

// TestRunStopsOnCancel: cancelling Run's context closes every socket and
// connection, and Run returns once they are closed.
func TestRunStopsOnCancel(t *testing.T) {
	a := tcpBackend(t, netip.AddrPortFrom(loopback(11), 0), "a")
	sp := svcPort(t, "svc", nodetable.TCP, a)
	p := proxy.New(proxy.Options{})
	if err := p.Update(ruleset(sp)); err != nil {
		t.Fatal(err)
	}
	c, _, err := dialFrom(loopback(2), proxyAddr(sp))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return with a connection open")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection survived the shutdown")
	}
	if _, _, err := dialFrom(loopback(2), proxyAddr(sp)); !isRefused(err) {
		t.Fatalf("the proxy socket survived the shutdown: %v", err)
	}
	if err := p.Update(ruleset(sp)); err == nil {
		t.Fatal("Update after the shutdown succeeded")
	}
}
