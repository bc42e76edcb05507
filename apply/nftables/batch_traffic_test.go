package nftables

import (
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// trafficService is a ClusterIP Service of the lab on ip:80 whose
// endpoints are the lab's pods on port 8080.
func trafficService(name, ip string, affinity int32, pods ...*netlab.Pod) nodetable.ServicePort {
	sp := nodetable.ServicePort{
		Name:                   nodetable.ServicePortName{Namespace: "default", Name: name, Port: "http", Protocol: nodetable.TCP},
		ClusterIP:              netip.MustParseAddr(ip),
		Port:                   80,
		AffinityTimeoutSeconds: affinity,
	}
	var eps []nodetable.Endpoint
	for _, p := range pods {
		eps = append(eps, nodetable.Endpoint{IP: p.IP(), Port: 8080, NodeName: "node1", Local: true, Ready: true, Serving: true})
	}
	synthetic.SetEndpoints(&sp, eps)
	sp.LocalEndpoints = eps
	return sp
}

// TestTrafficThroughNetlinkTable sends real connections through a table
// written by writeTable: the numgen maps' keys must be in the byte order
// the kernel's numgen produces (host order; with big-endian keys, as
// google/nftables v0.3.0 writes anonymous sets, most connections find no
// map entry), and the affinity sets and verdict maps must work.
func TestTrafficThroughNetlinkTable(t *testing.T) {
	lab := netlab.New(t)
	pods := []*netlab.Pod{
		lab.AddPod("a", netip.MustParseAddr("10.244.0.5")),
		lab.AddPod("b", netip.MustParseAddr("10.244.1.7")),
		lab.AddPod("c", netip.MustParseAddr("10.244.1.8")),
	}
	for _, p := range pods {
		if err := p.ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	table := &nodetable.ServiceTable{Family: nodetable.IPv4, Node: nodetable.Node{Name: "node1", IPs: []netip.Addr{netlab.NodeIP}}}
	table.Ports = []nodetable.ServicePort{
		trafficService("spread", "10.96.0.10", 0, pods...),
		trafficService("sticky", "10.96.0.11", 10800, pods...),
	}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	rs := render.NFTables(table, cfg)
	err := lab.Node().Do(func() error {
		c, err := Open()
		if err != nil {
			return err
		}
		defer c.Close()
		return writeTable(c, rs)
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	const n = 30
	spread, err := lab.Client().Spread(ctx, netlab.TCP, netip.MustParseAddrPort("10.96.0.10:80"), n)
	if err != nil {
		t.Fatalf("numgen service: %v (answers so far %v)", err, spread)
	}
	if len(spread) != len(pods) {
		t.Errorf("numgen service: %d connections reached %v, want all of %d pods", n, spread, len(pods))
	}
	sticky, err := lab.Client().Spread(ctx, netlab.TCP, netip.MustParseAddrPort("10.96.0.11:80"), n)
	if err != nil {
		t.Fatalf("affinity service: %v (answers so far %v)", err, sticky)
	}
	if len(sticky) != 1 {
		t.Errorf("affinity service: %d connections from one client reached %v, want one pod", n, sticky)
	}
}
