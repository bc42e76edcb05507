package render

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// TestNodePortIPs checks where kube-proxy's nodePortAddresses put the
// Service health checks: every address by default in iptables and ipvs
// mode, the primary node IP by default in nftables mode, and the host
// addresses inside the CIDRs given, per family; a family the list leaves
// out is not limited.
func TestNodePortIPs(t *testing.T) {
	addrs := func(ss ...string) []netip.Addr {
		var out []netip.Addr
		for _, s := range ss {
			out = append(out, netip.MustParseAddr(s))
		}
		return out
	}
	v4 := &nodetable.ServiceTable{Family: nodetable.IPv4, Node: nodetable.Node{IPs: addrs("192.168.77.10")}}
	v6 := &nodetable.ServiceTable{Family: nodetable.IPv6, Node: nodetable.Node{IPs: addrs("fd00:77::10")}}
	host := addrs("127.0.0.1", "192.168.77.10", "10.1.2.3", "::1", "fd00:77::10")
	for _, c := range []struct {
		what    string
		list    []string
		keyword string
		table   *nodetable.ServiceTable
		wantAll bool
		wantIPs []netip.Addr
	}{
		{"iptables default", nil, NodePortAll, v4, true, nil},
		{"nftables default", nil, NodePortPrimary, v4, false, addrs("192.168.77.10")},
		{"nftables default, IPv6", nil, NodePortPrimary, v6, false, addrs("fd00:77::10")},
		{"a CIDR", []string{"10.0.0.0/8"}, NodePortAll, v4, false, addrs("10.1.2.3")},
		{"localhost", []string{"localhost"}, NodePortAll, v4, false, addrs("127.0.0.1")},
		{"only IPv4 listed: IPv6 unlimited", []string{"10.0.0.0/8"}, NodePortPrimary, v6, true, nil},
		{"all", []string{"all"}, NodePortPrimary, v6, true, nil},
	} {
		cfg := Config{NodePortAddresses: c.list, HostAddresses: host}
		all, ips := cfg.NodePortIPs(c.table, c.keyword)
		if all != c.wantAll || !slices.Equal(ips, c.wantIPs) {
			t.Errorf("%s: all %v, %v; want %v, %v", c.what, all, ips, c.wantAll, c.wantIPs)
		}
	}
}
