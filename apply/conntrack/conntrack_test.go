package conntrack_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/conntrack"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

const node = `apiVersion: v1
kind: Node
metadata: {name: node1}
status:
  addresses: [{type: InternalIP, address: 192.168.77.10}]
`

// udpService is a UDP Service on 10.96.0.53:53 served by the given pods.
func udpService(eps ...string) string {
	s := node + `---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: kube-system}
spec:
  clusterIP: 10.96.0.53
  clusterIPs: [10.96.0.53]
  ports: [{name: dns, port: 53, targetPort: 5353, protocol: UDP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: dns-1
  namespace: kube-system
  labels: {kubernetes.io/service-name: dns}
addressType: IPv4
ports: [{name: dns, port: 5353, protocol: UDP}]
endpoints:
`
	for _, ep := range eps {
		s += "- addresses: [" + ep + "]\n  conditions: {ready: true}\n"
	}
	return s
}

func table(t *testing.T, snapshot string) *nodetable.ServiceTable {
	snap, err := cluster.Decode("test", []byte(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	tables, _, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	return tables.IPv4
}

func load(t *testing.T, lab *netlab.Lab, tbl *nodetable.ServiceTable) {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	rs := render.IPTables(tbl, cfg)
	if err := lab.Node().EnsureNFAcct(); err != nil {
		t.Fatal(err)
	}
	if out, err := lab.Node().RunInput(context.Background(), []byte(rs.String()), "iptables-nft-restore", "--noflush"); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
}

// TestStaleUDPFlowIsCut keeps one UDP flow (the same client socket) going
// while its endpoint is removed from the Service. The conntrack entry keeps
// the flow on the removed pod until CleanStaleUDP deletes it; then the next
// datagram is load-balanced to the remaining endpoint.
func TestStaleUDPFlowIsCut(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-nft-restore")
	lab := netlab.New(t)
	for name, ip := range map[string]string{"old": "10.244.0.11", "new": "10.244.1.12"} {
		if err := lab.AddPod(name, netip.MustParseAddr(ip)).ServeUDP(5353); err != nil {
			t.Fatal(err)
		}
	}
	load(t, lab, table(t, udpService("10.244.0.11")))

	var conn *net.UDPConn
	if err := lab.Client().Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: netlab.ClientIP.AsSlice(), Port: 40053})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ask := func() string {
		t.Helper()
		dst := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.96.0.53:53"))
		if _, err := conn.WriteToUDP([]byte("q"), dst); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 128)
		n, _, err := conn.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return strings.Fields(string(buf[:n]))[0]
	}
	if got := ask(); got != "old" {
		t.Fatalf("first answer from %q, want old", got)
	}

	changed := table(t, udpService("10.244.1.12"))
	load(t, lab, changed)
	if got := ask(); got != "old" {
		t.Fatalf("before the cleanup the flow should still be stuck on the removed endpoint, got %q", got)
	}
	var deleted int
	if err := lab.Node().Do(func() (err error) {
		deleted, err = conntrack.CleanStaleUDP(changed)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if deleted != 1 {
		t.Errorf("deleted %d entries, want 1", deleted)
	}
	if got := ask(); got != "new" {
		t.Fatalf("after the cleanup the flow should reach the remaining endpoint, got %q", got)
	}
}
