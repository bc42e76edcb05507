package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// endpointRanges hold every endpoint of the synthetic tables: 10.128.0.0/9
// (synthetic.Table) and 10.127.0.0/16 (WithOneEndpointChanged).
var endpointRanges = []string{"10.128.0.0/9", "10.127.0.0/16"}

// backendPort is the synthetic endpoints' port.
const backendPort = 8080

// newLab builds the netlab topology with one backend namespace that owns
// every endpoint address: the node routes the endpoint ranges to it, and
// it takes them as local addresses (a "local" route on its loopback), so
// that one listener on 0.0.0.0:8080 accepts the connections to all
// 100,000 endpoints of 10k Services.
func newLab(b *testing.B) *netlab.Lab {
	testenv.RequireRoot(b)
	testenv.RequireTools(b, "ip")
	lab := netlab.New(b)
	pod := lab.AddPod("backends", netip.MustParseAddr("10.244.0.5"))
	ctx := context.Background()
	for _, r := range endpointRanges {
		if out, err := lab.Node().Run(ctx, "ip", "route", "add", r, "dev", pod.Iface(), "scope", "link"); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		if out, err := pod.NS().Run(ctx, "ip", "route", "add", "local", r, "dev", "lo"); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	if err := pod.NS().Serve(netlab.TCP, netip.AddrPortFrom(netip.IPv4Unspecified(), backendPort), "backends"); err != nil {
		b.Fatal(err)
	}
	return lab
}

// serviceIP is the address and port of Service port i of the table.
func serviceIP(t *nodetable.ServiceTable, i int) netip.AddrPort {
	return netip.AddrPortFrom(t.Ports[i].ClusterIP, uint16(t.Ports[i].Port))
}

// clusterIPRule matches the cluster IP in a KUBE-SERVICES rule.
var clusterIPRule = regexp.MustCompile(`^-d (\S+)/32 .*-j KUBE-SVC-`)

// firstAndLast returns the indexes of the table's Service ports whose
// cluster IPs iptables mode matches first and last in nat KUBE-SERVICES,
// the chain every new connection walks until its Service's rule. The
// same two Services are timed in every mode; only iptables has an order.
func firstAndLast(t *nodetable.ServiceTable) (first, last int, err error) {
	index := map[netip.Addr]int{}
	for i, sp := range t.Ports {
		index[sp.ClusterIP] = i
	}
	nat := render.IPTables(t, config()).Table(ipt.NAT)
	if nat == nil || nat.Chain("KUBE-SERVICES") == nil {
		return 0, 0, fmt.Errorf("dataplane: the iptables rendering has no nat KUBE-SERVICES")
	}
	var order []int
	for _, r := range nat.Chain("KUBE-SERVICES").Rules {
		m := clusterIPRule.FindStringSubmatch(string(r))
		if m == nil {
			continue
		}
		if i, ok := index[netip.MustParseAddr(m[1])]; ok {
			order = append(order, i)
		}
	}
	if len(order) != len(t.Ports) {
		return 0, 0, fmt.Errorf("dataplane: KUBE-SERVICES names %d of %d cluster IPs", len(order), len(t.Ports))
	}
	return order[0], order[len(order)-1], nil
}
