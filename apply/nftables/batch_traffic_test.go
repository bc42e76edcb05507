package nftables

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
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
// written by writeTable, in both layouts: the numgen maps' keys must be in
// the byte order the kernel's numgen produces (host order; with big-endian
// keys, as google/nftables v0.3.0 writes anonymous sets, most connections
// find no map entry), the compact layout's numgen rules must reach every
// endpoint, and the affinity sets and verdict maps must work.
func TestTrafficThroughNetlinkTable(t *testing.T) {
	for _, layout := range []string{render.NFTablesLayoutKubeProxy, render.NFTablesLayoutCompact} {
		t.Run(layout, func(t *testing.T) {
			lab, pods := trafficLab(t, 3)
			writeLabTable(t, lab, layout,
				trafficService("spread", "10.96.0.10", 0, pods...),
				trafficService("sticky", "10.96.0.11", 10800, pods...))
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
		})
	}
}

// trafficLab returns a lab with n pods serving TCP on 8080.
func trafficLab(t *testing.T, n int) (*netlab.Lab, []*netlab.Pod) {
	t.Helper()
	lab := netlab.New(t)
	var pods []*netlab.Pod
	for i := range n {
		p := lab.AddPod(fmt.Sprintf("p%d", i), netip.AddrFrom4([4]byte{10, 244, byte(i % 2), byte(5 + i)}))
		if err := p.ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	return lab, pods
}

// writeLabTable renders ports in layout and writes the table into the
// lab's node with writeTable.
func writeLabTable(t *testing.T, lab *netlab.Lab, layout string, ports ...nodetable.ServicePort) {
	t.Helper()
	table := &nodetable.ServiceTable{Family: nodetable.IPv4, Node: nodetable.Node{Name: "node1", IPs: []netip.Addr{netlab.NodeIP}}}
	table.Ports = ports
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	cfg.NFTablesLayout = layout
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
}
