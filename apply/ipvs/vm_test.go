package ipvs

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

var (
	podA = netip.MustParseAddr("10.244.0.5")
	podB = netip.MustParseAddr("10.244.1.7")
	vip  = netip.AddrPortFrom(netip.MustParseAddr("10.96.0.10"), 80)
)

// podTable is node1's table with one Service, vip, whose endpoints are
// the given pods on port 8080.
func podTable(proto nodetable.Protocol, pods ...netip.Addr) *nodetable.ServiceTable {
	t := synthetic.Table(0, 0)
	sp := nodetable.ServicePort{
		Name:      nodetable.ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: proto},
		ClusterIP: vip.Addr(), Port: int32(vip.Port()),
	}
	var eps []nodetable.Endpoint
	for _, p := range pods {
		eps = append(eps, nodetable.Endpoint{IP: p, Port: 8080, NodeName: "node1", Local: p == podA, Ready: true, Serving: true})
	}
	synthetic.SetEndpoints(&sp, eps)
	t.Ports = append(t.Ports, sp)
	return t
}

// TestIPVSApplyFromEmpty applies 50 Services to an empty node and checks
// the kernel's own listings: /proc/net/ip_vs, kube-ipvs0's addresses and
// `ipset save`; then the plan is empty and a second apply calls nothing.
func TestIPVSApplyFromEmpty(t *testing.T) {
	lab := netlab.New(t)
	c, ck := vmClient(t, lab)
	desired := renderTable(synthetic.Table(50, 3), "rr")
	apply(t, c, desired)
	procs := procIPVS(t, lab.Node())
	if len(procs) != len(desired.VirtualServers) {
		t.Errorf("/proc/net/ip_vs lists %d virtual servers, want %d", len(procs), len(desired.VirtualServers))
	}
	for _, vs := range desired.VirtualServers {
		p := procs[string(vs.Protocol)+" "+netip.AddrPortFrom(vs.Address, vs.Port).String()]
		if p == nil || p.sched != vs.Scheduler || len(p.dests) != len(vs.RealServers) {
			t.Fatalf("virtual server %s: kernel has %+v", vs.Service(), p)
		}
		for _, r := range vs.RealServers {
			if w, ok := p.dests[netip.AddrPortFrom(r.Address, r.Port)]; !ok || w != int(r.Weight) {
				t.Errorf("%s real server %s: weight %d (present %v), want %d", vs.Service(), r.Address, w, ok, r.Weight)
			}
		}
	}
	out, err := lab.Node().Run(t.Context(), "ip", "-o", "-4", "addr", "show", "dev", ipvs.DummyDevice)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range desired.Addresses {
		if !strings.Contains(string(out), " "+a.String()+"/32 ") {
			t.Errorf("kube-ipvs0 lacks %s:\n%s", a, out)
		}
	}
	save := ipsetSave(t, lab.Node())
	for _, l := range saveLines(desired.Sets) {
		if !slices.Contains(save, l) {
			t.Errorf("ipset save lacks %q", l)
		}
	}
	requireEmpty(t, c, desired)
	ck.reset()
	apply(t, c, desired)
	if a, e, d := ck.reset(); a+e+d != 0 {
		t.Errorf("a second apply made %d adds, %d edits, %d deletes", a, e, d)
	}
}

// TestIPVSSchedulers applies each scheduler kube-proxy accepts, in place
// on the same virtual servers, and reads it back.
func TestIPVSSchedulers(t *testing.T) {
	lab := netlab.New(t)
	c, ck := vmClient(t, lab)
	table := synthetic.Table(5, 2)
	apply(t, c, renderTable(table, "rr"))
	ck.reset()
	for _, sched := range []string{"wrr", "lc", "wlc", "sh", "dh", "sed", "nq", "mh", "rr"} {
		desired := renderTable(table, sched)
		plans := mustPlan(t, c, desired)
		if err := c.Apply(t.Context(), plans); err != nil {
			if strings.Contains(err.Error(), "not available") {
				t.Logf("scheduler %s: skipped, the kernel lacks its module: %v", sched, err)
				ck.reset()
				continue
			}
			t.Fatalf("scheduler %s: %v", sched, err)
		}
		if a, e, d := ck.reset(); a != 0 || d != 0 || e != len(desired.VirtualServers) {
			t.Errorf("scheduler %s: %d adds, %d edits, %d deletes; want %d edits only", sched, a, e, d, len(desired.VirtualServers))
		}
		for key, p := range procIPVS(t, lab.Node()) {
			if p.sched != sched {
				t.Errorf("scheduler %s: the kernel lists %s with %s", sched, key, p.sched)
			}
		}
		live, _, err := c.Kernel.Services(nodetable.IPv4)
		if err != nil {
			t.Fatal(err)
		}
		for _, vs := range live {
			wantFlags := ipvs.Flags(0)
			if sched == "mh" {
				wantFlags = ipvs.FlagSched2
			}
			if vs.Flags != wantFlags {
				t.Errorf("scheduler %s: %s reads back with flags %#x, want %#x", sched, vs.Service(), vs.Flags, wantFlags)
			}
		}
		requireEmpty(t, c, desired)
	}
}

// TestIPVSChangesInPlace changes the scheduler, a weight and the
// persistence of a virtual server that carries an open connection, and
// checks that each change is an edit (no virtual server deleted or added)
// and that the connection keeps working through it.
func TestIPVSChangesInPlace(t *testing.T) {
	lab := netlab.New(t)
	c, ck := vmClient(t, lab)
	for _, ip := range []netip.Addr{podA, podB} {
		serveHeld(t, lab.AddPod(map[netip.Addr]string{podA: "a", podB: "b"}[ip], ip), 8080)
	}
	table := podTable(nodetable.TCP, podA, podB)
	apply(t, c, renderTable(table, "rr"))
	held := dialHeld(t, lab.Client(), vip)
	first, err := held.ask()
	if err != nil {
		t.Fatal(err)
	}
	ck.reset()
	steps := map[string]func() *ipvs.Ruleset{
		"scheduler": func() *ipvs.Ruleset { return renderTable(table, "wlc") },
		"weight": func() *ipvs.Ruleset {
			rs := renderTable(table, "wlc")
			rs.VirtualServers[0].RealServers[1].Weight = 3
			return rs
		},
		"persistence": func() *ipvs.Ruleset {
			tt := podTable(nodetable.TCP, podA, podB)
			tt.Ports[0].AffinityTimeoutSeconds = 600
			return renderTable(tt, "wlc")
		},
	}
	for _, name := range []string{"scheduler", "weight", "persistence"} {
		desired := steps[name]()
		plans := apply(t, c, desired)
		if s := plans[0].Changes.Summary(); s.ServicesChanged+s.DestinationsChanged == 0 {
			t.Fatalf("%s: the plan found nothing to change: %v", name, s)
		}
		if a, _, d := ck.reset(); a != 0 || d != 0 {
			t.Errorf("%s: %d virtual servers added and %d deleted; want an edit in place", name, a, d)
		}
		if got, err := held.ask(); err != nil || got != first {
			t.Errorf("%s: the open connection to %s answered %q, %v; want %s still", name, first, got, err, first)
		}
		p := procIPVS(t, lab.Node())["tcp "+vip.String()]
		if p == nil || p.sched != "wlc" {
			t.Fatalf("%s: kernel lists %+v", name, p)
		}
		if name == "persistence" && !p.persistent {
			t.Errorf("persistence not set: %+v", p)
		}
		requireEmpty(t, c, desired)
	}
}

// TestIPVSDriftIsRepaired deletes a real server (as ipvsadm -d would),
// unbinds an address from kube-ipvs0 and deletes an ipset entry by hand,
// checks that plan reports each of them and that apply repairs them.
func TestIPVSDriftIsRepaired(t *testing.T) {
	lab := netlab.New(t)
	c, _ := vmClient(t, lab)
	a := lab.AddPod("a", podA)
	b := lab.AddPod("b", podB)
	for _, p := range []*netlab.Pod{a, b} {
		if err := p.ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	desired := renderTable(podTable(nodetable.TCP, podA, podB), "rr")
	apply(t, c, desired)
	vs := desired.VirtualServers[0]
	if err := c.Kernel.DeleteDest(vs, vs.RealServers[0]); err != nil {
		t.Fatal(err)
	}
	ns := lab.Node()
	if _, err := ns.Run(t.Context(), "ip", "addr", "del", vip.Addr().String()+"/32", "dev", ipvs.DummyDevice); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Run(t.Context(), "ipset", "del", "KUBE-CLUSTER-IP", vip.Addr().String()+",tcp:80"); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Client().DialTCP(t.Context(), vip, netlab.DefaultTimeout); err == nil {
		t.Errorf("the service still answers with its address unbound")
	}
	plans := mustPlan(t, c, desired)
	cs := plans[0].Changes
	s := cs.Summary()
	if s.DestinationsAdded != 1 || s.AddressesAdded != 1 || s.ElementsAdded != 1 || s.ServicesAdded+s.ServicesDeleted != 0 {
		t.Errorf("plan %v; want the real server, the address and the entry back:\n%s", s, planText(t, plans))
	}
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, c, desired)
	counts, err := lab.Client().Spread(t.Context(), netlab.TCP, vip, 8)
	if err != nil || counts["a"] == 0 || counts["b"] == 0 {
		t.Errorf("after repair, connections reached %v (%v); want both a and b", counts, err)
	}
}

// TestIPVSForeignStateIsLeftAlone adds virtual servers, a set and an
// address the tool does not own, applies, resets, and checks they are
// all still there while everything the tool owns is gone after the reset.
func TestIPVSForeignStateIsLeftAlone(t *testing.T) {
	lab := netlab.New(t)
	c, _ := vmClient(t, lab)
	c.Ownership.ExcludeCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.5.0/24")}
	desired := renderTable(synthetic.Table(10, 2), "rr")
	apply(t, c, desired)
	foreign := []*ipvs.VirtualServer{
		{Protocol: ipvs.TCP, Address: netip.MustParseAddr("192.0.2.99"), Port: 80, Scheduler: "rr"}, // outside every rendered range
		{Protocol: ipvs.TCP, Address: netlab.NodeIP, Port: 8443, Scheduler: "rr"},                   // on the node IP, not a NodePort
		{Protocol: ipvs.UDP, Address: netip.MustParseAddr("10.96.5.5"), Port: 53, Scheduler: "rr"},  // bound to kube-ipvs0 but excluded
	}
	for _, vs := range foreign {
		if err := c.Kernel.AddService(vs); err != nil {
			t.Fatal(err)
		}
	}
	ns := lab.Node()
	for _, cmd := range [][]string{
		{"ip", "addr", "add", "10.96.5.5/32", "dev", ipvs.DummyDevice},
		{"ipset", "create", "cali40all-hosts", "hash:ip"},
	} {
		if _, err := ns.Run(t.Context(), cmd[0], cmd[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	requireForeign := func(when string) {
		t.Helper()
		procs := procIPVS(t, ns)
		for _, vs := range foreign {
			if procs[string(vs.Protocol)+" "+netip.AddrPortFrom(vs.Address, vs.Port).String()] == nil {
				t.Errorf("%s: foreign virtual server %s was deleted", when, vs.Service())
			}
		}
		if !slices.ContainsFunc(ipsetSave(t, ns), func(l string) bool { return strings.HasPrefix(l, "create cali40all-hosts ") }) {
			t.Errorf("%s: foreign set destroyed", when)
		}
	}
	// The plan unbinds 10.96.5.5 (kube-ipvs0 is the tool's) but keeps its
	// excluded virtual server.
	apply(t, c, desired)
	requireForeign("apply")
	requireEmpty(t, c, desired)

	plans, err := c.PlanReset(t.Context(), []nodetable.Family{nodetable.IPv4})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	requireForeign("reset")
	if procs := procIPVS(t, ns); len(procs) != len(foreign) {
		t.Errorf("after reset the kernel lists %d virtual servers, want the %d foreign ones", len(procs), len(foreign))
	}
	if save := ipsetSave(t, ns); len(save) != 1 {
		t.Errorf("after reset, sets left: %v", save)
	}
	if _, err := ns.Run(t.Context(), "ip", "link", "show", ipvs.DummyDevice); err == nil {
		t.Errorf("%s still exists after reset", ipvs.DummyDevice)
	}
	out, err := ns.Run(t.Context(), "iptables-nft-save")
	if err != nil {
		t.Fatal(err)
	}
	for _, chain := range []string{"KUBE-SERVICES", "KUBE-IPVS-FILTER", "KUBE-NODE-PORT", "KUBE-POSTROUTING"} {
		if strings.Contains(string(out), ":"+chain+" ") {
			t.Errorf("chain %s left after reset", chain)
		}
	}
}

// TestIPVSDeletesUDPAtOnce removes a UDP backend that carries a flow: no
// graceful termination, as in kube-proxy.
func TestIPVSDeletesUDPAtOnce(t *testing.T) {
	lab := netlab.New(t)
	c, _ := vmClient(t, lab)
	for _, ip := range []netip.Addr{podA, podB} {
		if err := lab.AddPod(map[netip.Addr]string{podA: "a", podB: "b"}[ip], ip).ServeUDP(8080); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, c, renderTable(podTable(nodetable.UDP, podA, podB), "rr"))
	if _, err := lab.Client().Spread(t.Context(), netlab.UDP, vip, 4); err != nil {
		t.Fatal(err)
	}
	plans := apply(t, c, renderTable(podTable(nodetable.UDP, podA), "rr"))
	sc := plans[0].Changes.Services
	if len(sc) != 1 || len(sc[0].Dests) != 1 || sc[0].Dests[0].Verb != diff.IPVSDeleteDest || sc[0].Dests[0].Conns.Total() == 0 {
		t.Fatalf("want the busy UDP real server deleted at once; got %+v", sc)
	}
	if p := procIPVS(t, lab.Node())["udp "+vip.String()]; len(p.dests) != 1 {
		t.Errorf("kernel lists %v", p.dests)
	}
}
