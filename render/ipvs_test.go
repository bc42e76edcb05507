package render_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

func ep(ip string, local bool) nodetable.Endpoint {
	return nodetable.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Local: local, Ready: true, Serving: true}
}

// ipvsTable is one node (192.168.77.10) with one TCP service port.
func ipvsTable(sp nodetable.ServicePort) *nodetable.ServiceTable {
	fam := nodetable.FamilyOf(sp.ClusterIP)
	node := netip.MustParseAddr("192.168.77.10")
	if fam == nodetable.IPv6 {
		node = netip.MustParseAddr("fd00:77::10")
	}
	sp.Name = nodetable.ServicePortName{Namespace: "ns", Name: "svc", Port: "http", Protocol: cmpOr(sp.Name.Protocol, nodetable.TCP)}
	if sp.Port == 0 {
		sp.Port = 80
	}
	return &nodetable.ServiceTable{Family: fam, Node: nodetable.Node{Name: "node1", IPs: []netip.Addr{node}}, Ports: []nodetable.ServicePort{sp}}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

func realServers(vs *ipvs.VirtualServer) []string {
	var out []string
	for _, r := range vs.RealServers {
		out = append(out, netip.AddrPortFrom(r.Address, r.Port).String())
	}
	return out
}

func mustVS(t *testing.T, rs *ipvs.Ruleset, addr string, port uint16) *ipvs.VirtualServer {
	t.Helper()
	vs := rs.VirtualServer(ipvs.TCP, netip.MustParseAddr(addr), port)
	if vs == nil {
		t.Fatalf("no virtual server %s:%d in\n%s", addr, port, rs)
	}
	return vs
}

func TestIPVSSchedulerValidation(t *testing.T) {
	for _, s := range []string{"", "rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq", "mh"} {
		if err := (render.IPVSOptions{Scheduler: s}).Validate(); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"RR", "fo", "ovf", "round-robin"} {
		if err := (render.IPVSOptions{Scheduler: s}).Validate(); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestIPVSSchedulerFlagsAndPersistence(t *testing.T) {
	sp := nodetable.ServicePort{ClusterIP: netip.MustParseAddr("10.96.0.10"), AffinityTimeoutSeconds: 10800}
	cfg := render.DefaultConfig()
	rs := render.IPVS(ipvsTable(sp), cfg, render.IPVSOptions{Scheduler: "mh"})
	vs := mustVS(t, rs, "10.96.0.10", 80)
	if vs.Scheduler != "mh" || vs.Flags != ipvs.FlagPersistent|ipvs.FlagSched2 || vs.Timeout != 10800 {
		t.Errorf("got %+v", vs)
	}
	if !strings.Contains(rs.String(), "-A -t 10.96.0.10:80 -s mh -p 10800 -b mh-port\n") {
		t.Errorf("text:\n%s", rs)
	}
	vs = mustVS(t, render.IPVS(ipvsTable(nodetable.ServicePort{ClusterIP: sp.ClusterIP}), cfg, render.IPVSOptions{}), "10.96.0.10", 80)
	if vs.Scheduler != "rr" || vs.Flags != 0 || vs.Timeout != 0 {
		t.Errorf("default: got %+v", vs)
	}
}

func TestIPVSExternalPolicyLocal(t *testing.T) {
	local, remote := ep("10.244.0.5", true), ep("10.244.1.5", false)
	sp := nodetable.ServicePort{
		ClusterIP: netip.MustParseAddr("10.96.0.10"), NodePort: 30080,
		LoadBalancerVIPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}, ExternalPolicyLocal: true,
		AllEndpoints: []nodetable.Endpoint{local, remote}, ClusterEndpoints: []nodetable.Endpoint{local, remote},
		LocalEndpoints: []nodetable.Endpoint{local}, HasEndpoints: true,
	}
	rs := render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	if got := realServers(mustVS(t, rs, "10.96.0.10", 80)); !slices.Equal(got, []string{"10.244.0.5:8080", "10.244.1.5:8080"}) {
		t.Errorf("cluster IP real servers %v", got)
	}
	for _, addr := range []string{"192.0.2.1:80", "192.168.77.10:30080"} {
		ap := netip.MustParseAddrPort(addr)
		if got := realServers(mustVS(t, rs, ap.Addr().String(), ap.Port())); !slices.Equal(got, []string{"10.244.0.5:8080"}) {
			t.Errorf("%s real servers %v, want only the local endpoint", addr, got)
		}
	}
	wantEntries(t, rs, "KUBE-NODE-PORT-LOCAL-TCP", "30080")
	wantEntries(t, rs, "KUBE-LOAD-BALANCER-LOCAL", "192.0.2.1,tcp:80")
	wantEntries(t, rs, "KUBE-LOOP-BACK", "10.244.0.5,tcp:8080,10.244.0.5")

	// No local endpoint: kube-proxy's syncEndpoint falls back to the cluster endpoints.
	sp.LocalEndpoints, sp.AllEndpoints, sp.ClusterEndpoints = nil, []nodetable.Endpoint{remote}, []nodetable.Endpoint{remote}
	rs = render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	if got := realServers(mustVS(t, rs, "192.0.2.1", 80)); !slices.Equal(got, []string{"10.244.1.5:8080"}) {
		t.Errorf("no local endpoints: real servers %v", got)
	}
}

func wantEntries(t *testing.T, rs *ipvs.Ruleset, set string, entries ...string) {
	t.Helper()
	s := rs.Set(set)
	if s == nil {
		t.Fatalf("no set %s", set)
	}
	if !slices.Equal(s.Entries, entries) {
		t.Errorf("%s entries %q, want %q", set, s.Entries, entries)
	}
}

func TestIPVSLoadBalancerSourceRanges(t *testing.T) {
	sp := nodetable.ServicePort{
		ClusterIP: netip.MustParseAddr("10.96.0.10"), LoadBalancerVIPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.7/32")},
	}
	rs := render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	wantEntries(t, rs, "KUBE-LOAD-BALANCER-FW", "192.0.2.1,tcp:80")
	wantEntries(t, rs, "KUBE-LOAD-BALANCER-SOURCE-CIDR", "192.0.2.1,tcp:80,198.51.100.7", "192.0.2.1,tcp:80,203.0.113.0/24")
	wantEntries(t, rs, "KUBE-LOAD-BALANCER-SOURCE-IP")
	out := rs.IPTables.Table("filter").Chain("KUBE-IPVS-OUT-FILTER").Rules
	if len(out) != 1 || out[0] != "-s 192.0.2.1/32 -m ipvs --vproto 6 --vaddr 192.0.2.1 --vport 80 -j DROP" {
		t.Errorf("KUBE-IPVS-OUT-FILTER %q", out)
	}
	// A range holding the node IP lets the node in instead.
	sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("192.168.77.0/24")}
	rs = render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	wantEntries(t, rs, "KUBE-LOAD-BALANCER-SOURCE-IP", "192.0.2.1,tcp:80,192.0.2.1")
	if n := len(rs.IPTables.Table("filter").Chain("KUBE-IPVS-OUT-FILTER").Rules); n != 0 {
		t.Errorf("KUBE-IPVS-OUT-FILTER has %d rules", n)
	}
}

func TestIPVSNoEndpoints(t *testing.T) {
	sp := nodetable.ServicePort{ClusterIP: netip.MustParseAddr("10.96.0.10"), NodePort: 30080}
	rs := render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	// kube-proxy creates the virtual servers anyway, with no real servers.
	for _, a := range []netip.AddrPort{netip.MustParseAddrPort("10.96.0.10:80"), netip.MustParseAddrPort("192.168.77.10:30080")} {
		if vs := mustVS(t, rs, a.Addr().String(), a.Port()); len(vs.RealServers) != 0 {
			t.Errorf("%s: real servers %v", a, realServers(vs))
		}
	}
	if !slices.Equal(rs.Addresses, []netip.Addr{netip.MustParseAddr("10.96.0.10")}) {
		t.Errorf("kube-ipvs0 addresses %v", rs.Addresses)
	}
}

func TestIPVSDualStackNames(t *testing.T) {
	e := ep("fd00:244::5", true)
	sp := nodetable.ServicePort{
		ClusterIP: netip.MustParseAddr("fd00:96::10"), NodePort: 30080, Name: nodetable.ServicePortName{Protocol: nodetable.SCTP},
		AllEndpoints: []nodetable.Endpoint{e}, ClusterEndpoints: []nodetable.Endpoint{e}, HasEndpoints: true,
	}
	rs := render.IPVS(ipvsTable(sp), render.DefaultConfig(), render.IPVSOptions{})
	for _, s := range rs.Sets {
		if !strings.HasPrefix(s.Name, "KUBE-6-") || len(s.Name) > 31 || (s.Type.IsHash() && s.Family != "inet6") {
			t.Errorf("set %s %s family %q", s.Name, s.Type, s.Family)
		}
	}
	wantEntries(t, rs, "KUBE-6-CLUSTER-IP", "fd00:96::10,sctp:80")
	wantEntries(t, rs, "KUBE-6-NODE-PORT-SCTP-HASH", "fd00:77::10,sctp:30080")
	if rs.VirtualServer(ipvs.SCTP, netip.MustParseAddr("fd00:77::10"), 30080) == nil {
		t.Errorf("no IPv6 NodePort virtual server:\n%s", rs)
	}
	if !strings.Contains(rs.String(), "-a --sctp-service [fd00:96::10]:80 -r [fd00:244::5]:8080 -m -w 1\n") {
		t.Errorf("text:\n%s", rs)
	}
	if got := render.IPVSSetName(render.SetLoadBalancerSourceCIDR, nodetable.IPv6); got != "KUBE-6-LOAD-BALANCER-SOURCE-CID" {
		t.Errorf("truncated name %q", got)
	}
}
