package healthcheck

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func ep(ip string, port int32, local, ready bool) nodetable.Endpoint {
	return nodetable.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Local: local, Ready: ready, Serving: ready}
}

func port(ns, name, portName string, hc int32, eps ...nodetable.Endpoint) nodetable.ServicePort {
	return nodetable.ServicePort{
		Name:                nodetable.ServicePortName{Namespace: ns, Name: name, Port: portName, Protocol: nodetable.TCP},
		HealthCheckNodePort: hc, ExternalPolicyLocal: hc != 0, AllEndpoints: eps,
	}
}

// TestServiceChecks checks kube-proxy's count of local endpoints: ready
// ones on this node, by address over all the Service's ports; terminating
// (serving, not ready) and remote endpoints do not count, and Services
// without a health check node port get no check.
func TestServiceChecks(t *testing.T) {
	terminating := ep("10.0.0.4", 80, true, false)
	terminating.Serving, terminating.Terminating = true, true
	table := &nodetable.ServiceTable{Family: nodetable.IPv4, Ports: []nodetable.ServicePort{
		port("a", "none", "", 30001),
		port("a", "one", "", 30002, ep("10.0.0.1", 80, true, true), ep("10.0.1.1", 80, false, true)),
		// One Pod behind two ports counts once; a second Pod adds one.
		port("a", "two", "http", 30003, ep("10.0.0.2", 80, true, true), ep("10.0.0.3", 80, true, true)),
		port("a", "two", "https", 30003, ep("10.0.0.2", 443, true, true)),
		port("a", "remote", "", 30004, ep("10.0.1.2", 80, false, true)),
		port("a", "terminating", "", 30005, terminating, ep("10.0.0.5", 80, true, false)),
		port("b", "cluster", "", 0, ep("10.0.0.6", 80, true, true)),
	}}
	got := ServiceChecks(table)
	want := map[ServiceName]ServiceCheck{
		{"a", "none"}:        {Port: 30001},
		{"a", "one"}:         {Port: 30002, LocalEndpoints: 1},
		{"a", "two"}:         {Port: 30003, LocalEndpoints: 2},
		{"a", "remote"}:      {Port: 30004},
		{"a", "terminating"}: {Port: 30005},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceChecks = %v\nwant %v", got, want)
	}
}

// TestListenAddresses checks where a family's checks listen: the
// family's wildcard, IPv6-only, or each address given.
func TestListenAddresses(t *testing.T) {
	ips := []netip.Addr{netip.MustParseAddr("192.168.77.10"), netip.MustParseAddr("10.1.1.1")}
	for _, c := range []struct {
		l       Listen
		f       nodetable.Family
		network string
		addrs   []string
	}{
		{Listen{All: true}, nodetable.IPv4, "tcp4", []string{"0.0.0.0:30000"}},
		{Listen{All: true}, nodetable.IPv6, "tcp6", []string{"[::]:30000"}},
		{Listen{IPs: ips}, nodetable.IPv4, "tcp4", []string{"192.168.77.10:30000", "10.1.1.1:30000"}},
		{Listen{IPs: []netip.Addr{netip.MustParseAddr("fd00:77::10")}}, nodetable.IPv6, "tcp6", []string{"[fd00:77::10]:30000"}},
		{Listen{}, nodetable.IPv4, "tcp4", nil},
	} {
		network, addrs := c.l.addresses(c.f, 30000)
		if network != c.network || !reflect.DeepEqual(addrs, c.addrs) {
			t.Errorf("%+v in %s: %s %v, want %s %v", c.l, c.f, network, addrs, c.network, c.addrs)
		}
	}
}

// TestServiceHandler checks one answer for every combination of the
// count and the proxy's health: the status, kube-proxy's headers and its
// body byte for byte.
func TestServiceHandler(t *testing.T) {
	clk := newClock()
	h := New(Options{Timeout: time.Minute, Now: clk.now})
	s := NewServiceServer(h, nil)
	name := ServiceName{"default", "web"}
	s.families[nodetable.IPv4] = &familyChecks{services: map[ServiceName]*serviceCheck{name: {port: 30000}}}
	handler := s.handler(nodetable.IPv4, name)
	for _, healthy := range []bool{true, false} {
		if !healthy {
			h.Queued()
			clk.t = clk.t.Add(time.Minute)
		}
		for _, n := range []int{0, 1, 3} {
			s.families[nodetable.IPv4].services[name].endpoints = n
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			wantCode := http.StatusServiceUnavailable
			if n > 0 && healthy {
				wantCode = http.StatusOK
			}
			wantBody := "{\n\t\"service\": {\n\t\t\"namespace\": \"default\",\n\t\t\"name\": \"web\"\n\t},\n\t\"localEndpoints\": " +
				strconv.Itoa(n) + ",\n\t\"serviceProxyHealthy\": " + strconv.FormatBool(healthy) + "\n}"
			wantHeader := http.Header{
				"Content-Type":                     {"application/json"},
				"X-Content-Type-Options":           {"nosniff"},
				"X-Load-Balancing-Endpoint-Weight": {strconv.Itoa(n)},
			}
			if rec.Code != wantCode || rec.Body.String() != wantBody || !reflect.DeepEqual(rec.Header(), wantHeader) {
				t.Errorf("%d endpoints, healthy %v: %d %v %q\nwant %d %v %q", n, healthy,
					rec.Code, rec.Header(), rec.Body, wantCode, wantHeader, wantBody)
			}
		}
	}
	// A request that raced the closing gets an empty answer.
	rec := httptest.NewRecorder()
	s.handler(nodetable.IPv4, ServiceName{"default", "gone"}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("closed check: %d %q, want an empty 200", rec.Code, rec.Body)
	}
}
