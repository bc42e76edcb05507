package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// startProxy starts `proxy` in the node namespace with the e2e node's
// backend, lock and state directory and args; the test's end stops it.
func startProxy(t *testing.T, n *e2eNode, args ...string) *bgProc {
	t.Helper()
	// e2eNode.args adds --lock-file for apply and reset only.
	return n.startBackground(t, "proxy", nil, "proxy", append([]string{"--lock-file=" + n.lockFile()}, args...)...)
}

// holdConn opens a TCP connection from ns to dst and reads the first line
// the backend sends, leaving the connection open.
func holdConn(t *testing.T, ns netlab.NS, dst netip.AddrPort) net.Conn {
	t.Helper()
	var c net.Conn
	err := ns.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", dst.String(), 2*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", dst, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("%s: no greeting: %v", dst, err)
	}
	return c
}

// serveHold serves, inside ns, a backend that greets each connection with
// its name and then echoes until the client closes: a long-lived
// connection.
func serveHold(t *testing.T, ns netlab.NS, addr netip.AddrPort, name string) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", addr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintln(c, name)
				io.Copy(c, c)
			}()
		}
	}()
}

// proxyNode1 starts every snapshot of the proxy test.
const proxyNode1 = `apiVersion: v1
kind: Node
metadata: {name: node1, labels: {kubernetes.io/hostname: node1}}
spec: {podCIDR: 10.244.0.0/24, podCIDRs: [10.244.0.0/24]}
status: {addresses: [{type: InternalIP, address: 192.168.77.10}]}
`

// proxyService is a Service with one port and its EndpointSlice; a
// nodePort of 0 is none.
func proxyService(name, spec, proto string, port, target, nodePort int, endpoints ...string) string {
	eps := "[]"
	if len(endpoints) > 0 {
		eps = "[{addresses: [" + strings.Join(endpoints, "]}, {addresses: [") + "]}]"
		eps = strings.ReplaceAll(eps, "]}", "], conditions: {ready: true}, nodeName: node1}")
	}
	np := ""
	if nodePort != 0 {
		np = fmt.Sprintf(", nodePort: %d", nodePort)
	}
	return fmt.Sprintf(`---
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: default}
spec:
  %[2]s
  ports: [{name: p, port: %[4]d, targetPort: %[5]d, protocol: %[3]s%[7]s}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: %[1]s-1, namespace: default, labels: {kubernetes.io/service-name: %[1]s}}
addressType: IPv4
ports: [{name: p, port: %[5]d, protocol: %[3]s}]
endpoints: %[6]s
`, name, spec, proto, port, target, eps, np)
}

// The proxy test's cluster. gone and added differ between its two states.
var (
	proxyWeb = proxyService("web", "type: NodePort\n  clusterIP: 10.96.0.10\n  externalIPs: [192.0.2.40]", "TCP", 80, 8080, 30080,
		"10.244.0.11", "10.244.0.12", "10.244.1.13")
	proxyDNS    = proxyService("dns", "type: NodePort\n  clusterIP: 10.96.0.53", "UDP", 53, 5353, 30053, "10.244.0.53", "10.244.1.53")
	proxySticky = proxyService("sticky", "clusterIP: 10.96.0.45\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}",
		"TCP", 80, 8080, 0, "10.244.0.11", "10.244.0.12", "10.244.1.13")
	// flaky's second endpoint is a pod that serves nothing: it refuses.
	proxyFlaky = proxyService("flaky", "clusterIP: 10.96.0.60", "TCP", 80, 8080, 0, "10.244.0.11", "10.244.0.14")
	proxyEmpty = proxyService("empty", "clusterIP: 10.96.0.90", "TCP", 80, 8080, 0)
	proxyGone  = proxyService("gone", "clusterIP: 10.96.0.70", "TCP", 9000, 9000, 0, "10.244.0.31")
	proxyAdded = proxyService("added", "clusterIP: 10.96.0.80", "TCP", 80, 8080, 0, "10.244.0.21")

	proxyPods = map[string]string{"10.244.0.11": "web-a", "10.244.0.12": "web-b", "10.244.1.13": "web-c", "10.244.0.21": "added",
		"10.244.0.53": "dns-a", "10.244.1.53": "dns-b", "10.244.0.14": "refuser", "10.244.0.31": "hold"}

	proxyBefore = proxyNode1 + proxyWeb + proxyDNS + proxySticky + proxyFlaky + proxyEmpty + proxyGone
	proxyAfter  = proxyNode1 + proxyWeb + proxyDNS + proxySticky + proxyFlaky + proxyEmpty + proxyAdded
)

// TestE2EProxy runs `proxy` in a lab node with a snapshot file and checks
// real traffic through the portal rules, a reload under traffic, a bad
// reload, the metrics, and SIGTERM with --cleanup-on-exit.
func TestE2EProxy(t *testing.T) {
	t.Parallel()
	n := newProxyNode(t)
	// web-*, added: TCP 8080; dns-*: UDP 5353; refuser: nothing; hold: 9000.
	for _, ip := range []string{"10.244.0.11", "10.244.0.12", "10.244.1.13", "10.244.0.21", "10.244.0.53", "10.244.1.53", "10.244.0.14", "10.244.0.31"} {
		name := proxyPods[ip]
		p := n.lab.AddPod(name, netip.MustParseAddr(ip))
		var err error
		switch name[:3] {
		case "web", "add":
			err = p.ServeTCP(8080)
		case "dns":
			err = p.ServeUDP(5353)
		case "hol":
			serveHold(t, p.NS(), netip.AddrPortFrom(p.IP(), 9000), name)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(n.dir, "snapshot.yaml")
	writeSnapshot(t, snap, proxyBefore)
	p := startProxy(t, n, "-f", snap, "--node-name=node1", "--family=ipv4", "--cluster-cidr=10.244.0.0/16",
		"--reload-interval=100ms", "--min-sync-period=0", "--cleanup-on-exit", "-v=2",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256")
	waitProxyReady(t, p)

	t.Run("traffic", func(t *testing.T) { proxyTraffic(t, n) })
	t.Run("reload under traffic", func(t *testing.T) { proxyReload(t, n, p, snap) })
	t.Run("bad snapshot keeps state", func(t *testing.T) { proxyBadReload(t, n, p, snap) })
	t.Run("metrics", func(t *testing.T) { proxyMetrics(t, p) })

	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0", code)
	}
	if out := p.output(); !strings.Contains(out, "Removed the portal rules") {
		t.Errorf("--cleanup-on-exit: no log of removing the rules:\n%s", out)
	}
	for _, gone := range []string{"KUBE-PORTALS", "KUBE-NODEPORT-"} {
		if s := n.save(); strings.Contains(s, gone) {
			t.Fatalf("--cleanup-on-exit left %s behind:\n%s", gone, s)
		}
	}
}

// waitProxyReady waits for the proxy's first successful sync, and for
// its /healthz to answer 200. As kube-proxy v1.25's, /healthz answers 200
// from the start, before the first sync: it says only that no change has
// waited too long.
func waitProxyReady(t *testing.T, p *bgProc) {
	t.Helper()
	p.waitFor(t, "the first sync and /healthz to answer 200", 30*time.Second, func() bool {
		code, _ := p.get("127.0.0.1:10256", "/healthz")
		return code == http.StatusOK && p.metric(`svcproxy_userspace_syncs_total{result="success"}`) >= 1
	})
}

// newProxyNode is newE2ENode with the nft backend where it is installed,
// legacy otherwise.
func newProxyNode(t *testing.T) *e2eNode {
	t.Helper()
	backend := "nft"
	if _, err := exec.LookPath("iptables-nft-restore"); err != nil {
		backend = "legacy"
	}
	return newE2ENode(t, backend)
}

// TestE2EProxyAPI runs `proxy` against a real kube-apiserver, as the
// shipped RBAC's identity, and checks that watch events reach the data
// plane: a new Service starts answering and a removed endpoint stops
// getting connections.
func TestE2EProxyAPI(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	t.Parallel()
	n := newProxyNode(t)
	c := testcluster.StartWithRBAC(t)
	c.Apply(t, proxyNode1+proxyWeb)
	for _, ip := range []string{"10.244.0.11", "10.244.0.12", "10.244.1.13", "10.244.0.21"} {
		if err := n.lab.AddPod(proxyPods[ip], netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	p := startProxy(t, n, "--kubeconfig="+c.BridgeInto(t, n.lab.Node()), "--node-name=node1", "--family=ipv4",
		"--cluster-cidr=10.244.0.0/16", "--min-sync-period=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256")
	waitProxyReady(t, p)
	client := n.lab.Client()
	if got := proxySpread(t, client, netlab.TCP, "10.96.0.10:80", 30); len(got) != 3 {
		t.Fatalf("web: %v, want web-a, web-b and web-c", got)
	}

	c.Apply(t, proxyAdded)
	p.waitFor(t, "the added Service to answer", 15*time.Second, func() bool {
		_, err := client.DialTCP(t.Context(), netip.MustParseAddrPort("10.96.0.80:80"), 500*time.Millisecond)
		return err == nil
	})
	c.Apply(t, proxyService("web", "type: NodePort\n  clusterIP: 10.96.0.10\n  externalIPs: [192.0.2.40]", "TCP", 80, 8080, 30080,
		"10.244.0.11", "10.244.0.12"))
	p.waitFor(t, "web-c to leave web's rotation", 15*time.Second, func() bool {
		got, err := client.Spread(t.Context(), netlab.TCP, netip.MustParseAddrPort("10.96.0.10:80"), 6)
		return err == nil && got["web-c"] == 0 && got["web-a"] == 3 && got["web-b"] == 3
	})
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit code %d, want 0", code)
	}
	// Without --cleanup-on-exit the portal rules stay for the next run,
	// which gets the same proxy ports.
	if s := n.save("nat"); !strings.Contains(s, "-A KUBE-PORTALS-CONTAINER -d 10.96.0.80/32") {
		t.Errorf("SIGTERM without --cleanup-on-exit removed the portal rules:\n%s", s)
	}
}

// writeSnapshot replaces the file atomically, as kubectl get > tmp && mv.
func writeSnapshot(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// proxySpread probes dst n times from ns and returns the backends' counts.
func proxySpread(t *testing.T, ns netlab.NS, proto netlab.Proto, dst string, n int) map[string]int {
	t.Helper()
	got, err := ns.Spread(t.Context(), proto, netip.MustParseAddrPort(dst), n)
	if err != nil {
		t.Fatalf("%s %s: %v (so far %v)", proto, dst, err, got)
	}
	return got
}

func proxyTraffic(t *testing.T, n *e2eNode) {
	client, client2 := n.lab.Client(), n.lab.Client2()
	web := []string{"web-a", "web-b", "web-c"}
	for _, dst := range []string{"10.96.0.10:80", "192.168.77.10:30080", "192.0.2.40:80"} {
		// Round robin: 3 endpoints, 30 connections, 10 each.
		got := proxySpread(t, client, netlab.TCP, dst, 30)
		for _, w := range web {
			if got[w] != 10 {
				t.Errorf("TCP %s: %v, want 10 connections to each of %v", dst, got, web)
				break
			}
		}
	}
	for _, dst := range []string{"10.96.0.53:53", "192.168.77.10:30053"} {
		if got := proxySpread(t, client, netlab.UDP, dst, 20); got["dns-a"] != 10 || got["dns-b"] != 10 {
			t.Errorf("UDP %s: %v, want 10 datagrams (flows) to each of dns-a, dns-b", dst, got)
		}
	}
	for _, ns := range []netlab.NS{client, client2} {
		if got := proxySpread(t, ns, netlab.TCP, "10.96.0.45:80", 15); len(got) != 1 {
			t.Errorf("ClientIP affinity from %s: %v, want one endpoint", ns.Name(), got)
		}
	}
	if got := proxySpread(t, client, netlab.TCP, "10.96.0.60:80", 20); got["web-a"] != 20 {
		t.Errorf("a Service with a refusing endpoint: %v, want every connection at web-a", got)
	}
	_, err := client.DialTCP(t.Context(), netip.MustParseAddrPort("10.96.0.90:80"), 2*time.Second)
	if !netlab.IsRefused(err) {
		t.Errorf("a Service without endpoints: %v, want connection refused", err)
	}
}

// proxyReload swaps the snapshot while clients keep connecting to web
// (TCP) and dns (UDP): added must start answering, gone's open connection
// must be closed, and not one connection to web or dns may fail.
func proxyReload(t *testing.T, n *e2eNode, p *bgProc, snap string) {
	client := n.lab.Client()
	held := holdConn(t, client, netip.MustParseAddrPort("10.96.0.70:9000"))

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, failed := map[string]int{}, map[string][]error{}
	for _, target := range []struct {
		proto netlab.Proto
		dst   string
	}{{netlab.TCP, "10.96.0.10:80"}, {netlab.TCP, "10.96.0.10:80"}, {netlab.UDP, "10.96.0.53:53"}} {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := client.Probe(ctx, target.proto, netip.Addr{}, netip.MustParseAddrPort(target.dst), 2*time.Second)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				if err != nil {
					failed[target.dst] = append(failed[target.dst], err)
				} else {
					ok[target.dst]++
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	writeSnapshot(t, snap, proxyAfter)
	p.waitFor(t, "the added Service to answer", 15*time.Second, func() bool {
		_, err := client.DialTCP(t.Context(), netip.MustParseAddrPort("10.96.0.80:80"), 500*time.Millisecond)
		return err == nil
	})
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()

	held.SetReadDeadline(time.Now().Add(5 * time.Second))
	if nr, err := held.Read(make([]byte, 16)); err == nil || netlab.IsTimeout(err) {
		t.Errorf("the removed Service's connection is still open after the reload (read %d, %v)", nr, err)
	}
	if _, err := client.DialTCP(t.Context(), netip.MustParseAddrPort("10.96.0.70:9000"), 500*time.Millisecond); err == nil {
		t.Errorf("the removed Service still answers")
	}
	t.Logf("during the reload: %v connections succeeded, failed: %v", ok, failed)
	if len(failed) > 0 || ok["10.96.0.10:80"] < 10 || ok["10.96.0.53:53"] < 5 {
		t.Errorf("connections to unchanged Services during the reload: %v succeeded, failed: %v; want none failed", ok, failed)
	}
}

// proxyBadReload writes a snapshot that does not parse: the proxy logs the
// error, counts a failed sync and keeps serving the last good state.
func proxyBadReload(t *testing.T, n *e2eNode, p *bgProc, snap string) {
	before := p.metric(`svcproxy_userspace_syncs_total{result="error"}`)
	writeSnapshot(t, snap, proxyAfter+"---\napiVersion: v1\nkind: Service\nmetadata: {name: broken, namespace: default}\nspec:\n  ports:\n  - port: eighty\n")
	p.waitLog(t, "Reload failed; keeping the last good state", 10*time.Second)
	if after := p.metric(`svcproxy_userspace_syncs_total{result="error"}`); after <= before {
		t.Errorf(`syncs_total{result="error"} went from %v to %v; want it counted`, before, after)
	}
	var line string
	for l := range strings.Lines(p.output()) {
		if strings.Contains(l, "Reload failed") {
			line = l
		}
	}
	if !strings.Contains(line, "snapshot.yaml") || !strings.HasPrefix(line, "E") {
		t.Errorf("the error does not say which file failed to load, as a klog error line (E...): %q", line)
	}
	if got := proxySpread(t, n.lab.Client(), netlab.TCP, "10.96.0.80:80", 3); got["added"] != 3 {
		t.Errorf("after a bad snapshot the last good state stopped answering: %v", got)
	}
	writeSnapshot(t, snap, proxyAfter)
}

func proxyMetrics(t *testing.T, p *bgProc) {
	web := `service_port="default/web:p",protocol="tcp",family="IPv4"`
	for _, m := range []struct {
		name, labels string
	}{
		{"svcproxy_userspace_connections_total", web},
		{"svcproxy_userspace_bytes_total", web + `,direction="out"`},
		{"svcproxy_userspace_connections_total", `service_port="default/dns:p",protocol="udp"`},
		{"svcproxy_userspace_errors_total", `service_port="default/flaky:p",reason="dial"`},
		{"svcproxy_userspace_syncs_total", `result="success"`},
	} {
		if v := p.metric(m.name + "{" + m.labels + "}"); v <= 0 {
			t.Errorf("%s{%s} = %v, want > 0", m.name, m.labels, v)
		}
	}
	if v := p.metric("svcproxy_userspace_endpoints{" + web + "}"); v != 3 {
		t.Errorf("endpoints of web = %v, want 3", v)
	}
	if v := p.metric(`svcproxy_userspace_listening{service_port="default/empty:p"}`); v != 0 {
		t.Errorf("listening of the Service without endpoints = %v, want 0", v)
	}
	if code, body := p.get("127.0.0.1:10249", "/proxyMode"); code != http.StatusOK || body != "userspace" {
		t.Errorf("/proxyMode: %d %q", code, body)
	}
}
