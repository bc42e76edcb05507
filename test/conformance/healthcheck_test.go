package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// hcTarget is one address a load balancer probes, and what kube-proxy
// answers there: refused, or the status with the count of local endpoints.
type hcTarget struct {
	addr      netip.AddrPort
	refused   bool
	code      int
	endpoints int
}

func (h hcTarget) url() string { return "http://" + h.addr.String() + "/" }

// want says what kube-proxy is expected to answer.
func (h hcTarget) want() string {
	if h.refused {
		return "connection refused"
	}
	return fmt.Sprintf("%d with %d local endpoints", h.code, h.endpoints)
}

// matches reports whether r is the answer the target expects.
func (h hcTarget) matches(r HTTPReply) bool {
	if h.refused || r.Refused {
		return h.refused == r.Refused
	}
	return r.Code == h.code && r.Header.Get("X-Load-Balancing-Endpoint-Weight") == fmt.Sprint(h.endpoints) &&
		strings.Contains(r.Body, fmt.Sprintf(`"localEndpoints": %d,`, h.endpoints))
}

// The node's addresses in the lab.
var (
	hcNodeIPv4 = netip.MustParseAddr("192.168.77.10")
	hcNodeIPv6 = netip.MustParseAddr("fd00:77::10")
	hcLoopback = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
)

// hcTargets are the addresses to probe for each health check port of
// testdata/conformance/service-health-checks.yaml, with what kube-proxy
// answers in mode m: each IPv4 Service on the IPv4 node IP only, the
// dual-stack one on both with each family's count. In iptables mode
// (nodePortAddresses unset: every address) the checks answer on loopback
// too; in nftables mode (unset means "primary") loopback refuses.
func hcTargets(m Mode, changed bool) []hcTarget {
	type check struct {
		port   uint16
		v4, v6 int // local endpoints; -1: no check in that family
	}
	checks := []check{{32001, 0, -1}, {32002, 1, -1}, {32003, 3, -1}, {32004, 0, -1}, {32005, 2, 1}}
	if changed {
		// Service one deleted; zero got a local endpoint.
		checks[0].v4, checks[1].v4 = 1, -1
	}
	var out []hcTarget
	for _, c := range checks {
		for i, n := range []int{c.v4, c.v6} {
			nodeIP := []netip.Addr{hcNodeIPv4, hcNodeIPv6}[i]
			for _, a := range []netip.Addr{nodeIP, hcLoopback[i]} {
				t := hcTarget{addr: netip.AddrPortFrom(a, c.port), refused: n < 0 || (m == NFTables && a.IsLoopback())}
				if !t.refused {
					t.endpoints, t.code = n, http.StatusServiceUnavailable
					if n > 0 {
						t.code = http.StatusOK
					}
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// TestServiceHealthChecks runs the real kube-proxy v1.37.2 and `kubectl
// svcproxy apply --watch` side by side, each in a node namespace of its
// own (so that both bind the same ports), against the same objects, in
// iptables and nftables mode, and sends both the same requests: each
// Service health check node port on the node's addresses, and /healthz and
// /livez. Every answer must be the same, byte for byte (bar the Date
// header, and the times in /healthz and /livez), or refused in both.
// Then a Service is deleted (its port must refuse in both) and another
// gets a local endpoint (both must count it).
func TestServiceHealthChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and kube-proxy (-short)")
	}
	e := newEnv(t)
	s, snap := e.healthCheckScenario(t)
	for _, m := range Modes {
		t.Run(string(m), func(t *testing.T) { e.compareHealthChecks(t, s, snap, m) })
	}
}

// compareHealthChecks is TestServiceHealthChecks in one mode, from freshly
// loaded objects.
func (e *env) compareHealthChecks(t *testing.T, s *Scenario, snap *cluster.Snapshot, m Mode) {
	ctx := context.Background()
	e.reload(t, snap)
	p := e.startSyncedPair(t, s, snap, m)
	p.agree(t, "loaded", hcTargets(m, false))
	p.compareHealthz(t)

	client := e.cluster.Admin
	if err := client.CoreV1().Services("hc").Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "zero-1", Namespace: "hc", Labels: map[string]string{discoveryv1.LabelServiceName: "zero"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.11"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}, NodeName: ptr("node1")}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("hc").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.agree(t, "a Service deleted, another given a local endpoint", hcTargets(m, true))
}

// agree polls both processes until every target answers as expected in
// both and both answers are the same, and fails with both answers of
// every target that does not after a minute.
func (p Pair) agree(t *testing.T, what string, targets []hcTarget) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		var bad, seen []string
		for _, h := range targets {
			kp, err := GetInNS(ctx, p[0].ns, h.url())
			if err != nil {
				t.Fatalf("kube-proxy %s: %v", h.addr, err)
			}
			tool, err := GetInNS(ctx, p[1].ns, h.url())
			if err != nil {
				t.Fatalf("tool %s: %v", h.addr, err)
			}
			if !kp.Equal(tool) || !h.matches(kp) {
				bad = append(bad, fmt.Sprintf("%s (want %s):\n  kube-proxy: %s\n  tool:       %s", h.addr, h.want(), kp, tool))
			}
			seen = append(seen, fmt.Sprintf("  %s: %s", h.addr, kp))
		}
		if len(bad) == 0 {
			t.Logf("%s: %d health check addresses answer alike:\n%s", what, len(targets), strings.Join(seen, "\n"))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after a minute, %d of %d addresses differ or are not as expected:\n%s\nkube-proxy:\n%s\ntool:\n%s",
				what, len(bad), len(targets), strings.Join(bad, "\n"), p[0].Tail(20), p[1].Tail(20))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// compareHealthz compares /healthz and /livez, bar the times.
func (p Pair) compareHealthz(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, path := range []string{"/healthz", "/livez"} {
		var replies [2]HTTPReply
		for i, w := range p {
			r, err := GetInNS(ctx, w.ns, "http://"+healthzAddr+path)
			if err != nil {
				t.Fatalf("%s %s: %v", w.Name, path, err)
			}
			replies[i] = r.WithoutTimes()
			if w.Name != "kube-proxy" {
				if replies[i], err = replies[i].Unmarked(); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}
		}
		if !replies[0].Equal(replies[1]) || replies[0].Code != http.StatusOK {
			t.Errorf("%s:\n  kube-proxy: %s\n  tool:       %s", path, replies[0], replies[1])
		} else {
			t.Logf("%s alike: %s", path, replies[0])
		}
	}
}

// TestWithoutTimes checks the masking of the times in both forms of
// kube-proxy's health bodies, and that nothing else is masked.
func TestWithoutTimes(t *testing.T) {
	for in, want := range map[string]string{
		`{"lastUpdated":"2026-01-01T10:00:00.123456789Z","currentTime":"2026-01-01T10:00:00+02:00"}`:                         `{"lastUpdated":"TIME","currentTime":"TIME"}`,
		`{"lastUpdated": "2026-01-01 10:00:00.5 +0000 UTC m=+12.345678901","currentTime": "2026-01-01 10:00:00 +0200 CEST"}`: `{"lastUpdated": "TIME","currentTime": "TIME"}`,
		`{"service": {"name": "2026-01-01"}}`: `{"service": {"name": "2026-01-01"}}`,
	} {
		r := HTTPReply{Code: 200, Header: http.Header{"Content-Length": {"9"}, "Content-Type": {"application/json"}}, Body: in}
		got := r.WithoutTimes()
		if got.Body != want || got.Header.Get("Content-Length") != "" || got.Header.Get("Content-Type") == "" || r.Header.Get("Content-Length") == "" {
			t.Errorf("%s: %s, want body %s without Content-Length, the original untouched", in, got, want)
		}
	}
}
