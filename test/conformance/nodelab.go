package conformance

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// NodeLab is a fresh lab whose node namespace holds the scenario's node
// IPs (netlab's node has 192.168.77.10, and fd00:77::10 with IPv6) plus
// the host addresses config.yaml names, so that kube-proxy finds on its
// interfaces what the renderer is told.
func NodeLab(t testing.TB, s *Scenario, snap *cluster.Snapshot) *netlab.Lab {
	t.Helper()
	var opts []netlab.Option
	var addrs []netip.Addr
	for _, n := range snap.Nodes {
		if n.Name != s.Config.NodeName {
			continue
		}
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				addrs = append(addrs, ip)
				if ip.Is6() {
					opts = []netlab.Option{netlab.WithIPv6()}
				}
			}
		}
	}
	lab := netlab.New(t, opts...)
	ns := lab.Node()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range append(addrs, s.HostAddresses()...) {
		if a.IsLoopback() {
			continue
		}
		// netlab's own node IPs are there already: "File exists".
		out, err := ns.Run(ctx, "ip", "addr", "replace", netip.PrefixFrom(a, a.BitLen()).String(), "dev", "lo")
		if err != nil {
			t.Fatalf("add %s to %s: %v %s", a, ns.Name(), err, out)
		}
	}
	return lab
}
