package diff

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

var (
	addr   = netip.MustParseAddr
	nodeIP = addr("192.168.77.10")
)

func rs(a string, port uint16, w int32) ipvs.RealServer {
	return ipvs.RealServer{Address: addr(a), Port: port, Method: ipvs.Masquerade, Weight: w}
}

func vsOf(proto ipvs.Protocol, a string, port uint16, reals ...ipvs.RealServer) *ipvs.VirtualServer {
	return &ipvs.VirtualServer{Protocol: proto, Address: addr(a), Port: port, Scheduler: "rr", RealServers: reals}
}

// TestIPVSGracefulTermination checks the fate of a real server that leaves
// the desired state: kube-proxy's graceful termination keeps a TCP one at
// weight 0 while IPVS tracks connections to it, and deletes UDP, SCTP and
// idle ones at once.
func TestIPVSGracefulTermination(t *testing.T) {
	for _, tc := range []struct {
		name   string
		proto  ipvs.Protocol
		weight int32
		conns  IPVSConns
		want   IPVSVerb // "" = left draining, no change
	}{
		{"tcp active", ipvs.TCP, 1, IPVSConns{Active: 1}, IPVSDrainDest},
		{"tcp inactive only", ipvs.TCP, 1, IPVSConns{Inactive: 3}, IPVSDrainDest},
		{"tcp idle", ipvs.TCP, 1, IPVSConns{}, IPVSDeleteDest},
		{"tcp draining, still busy", ipvs.TCP, 0, IPVSConns{Active: 2, Inactive: 1}, ""},
		{"tcp draining, now idle", ipvs.TCP, 0, IPVSConns{}, IPVSDeleteDest},
		{"udp busy", ipvs.UDP, 1, IPVSConns{Active: 5, Inactive: 5}, IPVSDeleteDest},
		{"sctp busy", ipvs.SCTP, 1, IPVSConns{Active: 5}, IPVSDeleteDest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, gone := rs("10.244.0.5", 8080, 1), rs("10.244.1.7", 8080, tc.weight)
			desired := &ipvs.Ruleset{Family: nodetable.IPv4, VirtualServers: []*ipvs.VirtualServer{vsOf(tc.proto, "10.96.0.10", 80, keep)},
				Addresses: []netip.Addr{addr("10.96.0.10")}}
			live := &ipvs.Ruleset{Family: nodetable.IPv4, VirtualServers: []*ipvs.VirtualServer{vsOf(tc.proto, "10.96.0.10", 80, keep, gone)},
				Addresses: []netip.Addr{addr("10.96.0.10")}}
			key := IPVSDestKey{IPVSKey(live.VirtualServers[0]), netip.AddrPortFrom(gone.Address, gone.Port)}
			cs := IPVS(desired, live, ipvsOwn, IPVSOptions{DeviceExists: true, Conns: map[IPVSDestKey]IPVSConns{key: tc.conns}})
			if tc.want == "" {
				if !cs.Empty() || len(cs.Draining) != 1 || cs.Draining[0].Conns != tc.conns {
					t.Fatalf("want no change and one draining real server; got %+v", cs)
				}
				if s := cs.Summary(); s.DestinationsDraining != 1 {
					t.Errorf("summary %v: want draining 1", s)
				}
				if text := planOf(t, cs); !strings.Contains(text, "draining") || strings.Contains(text, "\n-") {
					t.Errorf("plan shows drift instead of draining:\n%s", text)
				}
				return
			}
			if len(cs.Services) != 1 || len(cs.Services[0].Dests) != 1 {
				t.Fatalf("want one real server change; got %+v", cs.Services)
			}
			d := cs.Services[0].Dests[0]
			if d.Verb != tc.want || d.Dest.Address != gone.Address {
				t.Fatalf("got %s of %v, want %s", d.Verb, d.Dest.Address, tc.want)
			}
			if d.Verb == IPVSDrainDest && (d.Dest.Weight != 0 || d.Old.Weight != tc.weight) {
				t.Errorf("drain sets weight %d (was %d), want 0", d.Dest.Weight, d.Old.Weight)
			}
		})
	}
}

// TestIPVSDrainingComesBack gives a draining real server back its weight
// in place, keeping its open connections.
func TestIPVSDrainingComesBack(t *testing.T) {
	back := rs("10.244.1.7", 8080, 1)
	desired := &ipvs.Ruleset{Family: nodetable.IPv4, VirtualServers: []*ipvs.VirtualServer{vsOf(ipvs.TCP, "10.96.0.10", 80, back)}}
	drained := back
	drained.Weight = 0
	live := &ipvs.Ruleset{Family: nodetable.IPv4, VirtualServers: []*ipvs.VirtualServer{vsOf(ipvs.TCP, "10.96.0.10", 80, drained)}}
	cs := IPVS(desired, live, ipvsOwn, IPVSOptions{DeviceExists: true})
	if len(cs.Services) != 1 || len(cs.Services[0].Dests) != 1 || cs.Services[0].Dests[0].Verb != IPVSEditDest || cs.Services[0].Dests[0].Dest.Weight != 1 {
		t.Fatalf("want an in-place weight edit back to 1; got %+v", cs.Services)
	}
}

// TestIPVSOwnership deletes the stale virtual servers the tool made and
// leaves everyone else's, and those in the excluded ranges, alone.
func TestIPVSOwnership(t *testing.T) {
	desired := ipvsRender(t, 20, render.IPVSOptions{})
	live := cloneIPVS(t, desired)
	stale := []*ipvs.VirtualServer{
		vsOf(ipvs.TCP, "10.96.99.1", 80, rs("10.128.9.9", 8080, 1)), // its address stays bound: a deleted Service
		vsOf(ipvs.TCP, nodeIP.String(), 30999),                      // a NodePort still in the live NodePort set
		vsOf(ipvs.SCTP, nodeIP.String(), 31000),                     // an SCTP NodePort in the live SCTP set
		vsOf(ipvs.UDP, "203.0.113.7", 53),                           // an external IP still bound
	}
	foreign := []*ipvs.VirtualServer{
		vsOf(ipvs.TCP, "192.0.2.1", 80, rs("192.0.2.100", 80, 1)), // another program's
		vsOf(ipvs.TCP, nodeIP.String(), 8443),                     // on the node IP, not a NodePort
		vsOf(ipvs.UDP, nodeIP.String(), 30999),                    // NodePort number, other protocol
		vsOf(ipvs.TCP, "10.96.200.1", 80),                         // bound, but excluded
	}
	live.VirtualServers = append(live.VirtualServers, stale...)
	live.VirtualServers = append(live.VirtualServers, foreign...)
	live.Addresses = append(live.Addresses, addr("10.96.99.1"), addr("203.0.113.7"), addr("10.96.200.1"))
	live.Set(render.SetNodePortTCP).Entries = append(live.Set(render.SetNodePortTCP).Entries, "30999")
	live.Set(render.SetNodePortSCTP).Entries = append(live.Set(render.SetNodePortSCTP).Entries, nodeIP.String()+",sctp:31000")
	// A desired virtual server in an excluded range is still kept up to date.
	excludedDesired := desired.VirtualServers[0]
	live.VirtualServer(excludedDesired.Protocol, excludedDesired.Address, excludedDesired.Port).Scheduler = "lc"
	own := render.IPVSOwnership([]netip.Prefix{
		netip.MustParsePrefix("10.96.200.0/24"), netip.PrefixFrom(excludedDesired.Address, 32)})

	cs := IPVS(desired, live, own, IPVSOptions{DeviceExists: true})
	var deleted []IPVSServiceKey
	edited := false
	for _, sc := range cs.Services {
		switch {
		case sc.Verb == IPVSDeleteService:
			deleted = append(deleted, IPVSKey(&sc.Service))
		case sc.Verb == IPVSEditService && IPVSKey(&sc.Service) == IPVSKey(excludedDesired):
			edited = true
		default:
			t.Errorf("unexpected change %s %v", sc.Verb, IPVSKey(&sc.Service))
		}
	}
	for _, vs := range stale {
		if !slices.Contains(deleted, IPVSKey(vs)) {
			t.Errorf("stale owned virtual server %v not deleted", IPVSKey(vs))
		}
	}
	for _, vs := range foreign {
		if slices.Contains(deleted, IPVSKey(vs)) {
			t.Errorf("foreign virtual server %v deleted", IPVSKey(vs))
		}
	}
	if !edited {
		t.Errorf("desired virtual server in an excluded range not edited")
	}
	// Addresses on kube-ipvs0 are all the tool's, excluded or not.
	if want := []netip.Addr{addr("10.96.99.1"), addr("10.96.200.1"), addr("203.0.113.7")}; !slices.Equal(cs.DelAddresses, want) {
		t.Errorf("unbound %v, want %v", cs.DelAddresses, want)
	}
}

// TestIPVSSetsAndAddressDrift repairs entries and addresses removed or
// added by hand, reports a set of the wrong type as a conflict, and never
// touches sets that are not kube-proxy's.
func TestIPVSSetsAndAddressDrift(t *testing.T) {
	desired := ipvsRender(t, 20, render.IPVSOptions{})
	live := cloneIPVS(t, desired)
	ci := live.Set(render.SetClusterIP)
	lost := ci.Entries[3]
	ci.Entries = slices.Delete(ci.Entries, 3, 4)
	ci.Entries = append(ci.Entries, "10.96.250.1,tcp:80")
	lostAddr := live.Addresses[5]
	live.Addresses = slices.Delete(live.Addresses, 5, 6)
	live.Set(render.SetIPVSIPs).Type = ipvs.HashIPPort
	live.Sets = append(live.Sets, &ipvs.Set{Name: "KUBE-DST-FOREIGN", Type: ipvs.HashIP, Family: "inet", Entries: []string{"1.2.3.4"}})

	cs := IPVS(desired, live, ipvsOwn, IPVSOptions{DeviceExists: true})
	if len(cs.Sets) != 1 || cs.Sets[0].Set.Name != render.SetClusterIP ||
		!slices.Equal(cs.Sets[0].Add, []string{lost}) || !slices.Equal(cs.Sets[0].Del, []string{"10.96.250.1,tcp:80"}) {
		t.Errorf("set changes %+v", cs.Sets)
	}
	if !slices.Equal(cs.AddAddresses, []netip.Addr{lostAddr}) || len(cs.DelAddresses) != 0 {
		t.Errorf("addresses +%v -%v, want +%v", cs.AddAddresses, cs.DelAddresses, lostAddr)
	}
	if len(cs.Conflicts) != 1 || !strings.Contains(cs.Conflicts[0], render.SetIPVSIPs) || cs.Empty() {
		t.Errorf("conflicts %v", cs.Conflicts)
	}
}

// TestIPVSReset removes every owned object, kube-ipvs0 included, and
// keeps foreign virtual servers and sets.
func TestIPVSReset(t *testing.T) {
	live := cloneIPVS(t, ipvsRender(t, 20, render.IPVSOptions{}))
	foreign := vsOf(ipvs.TCP, "192.0.2.1", 80)
	live.VirtualServers = append(live.VirtualServers, foreign)
	live.Sets = append(live.Sets, &ipvs.Set{Name: "cali40all-hosts", Type: ipvs.HashIP, Family: "inet"})

	cs := IPVS(EmptyIPVS(nodetable.IPv4), live, ipvsOwn, IPVSOptions{DeviceExists: true, Reset: true})
	after := replayIPVS(t, live, cs)
	if len(after.VirtualServers) != 1 || IPVSKey(after.VirtualServers[0]) != IPVSKey(foreign) {
		t.Errorf("virtual servers left: %v", after.VirtualServers)
	}
	if len(after.Sets) != 1 || after.Sets[0].Name != "cali40all-hosts" || len(after.Addresses) != 0 || cs.Device != IPVSDeleteDevice {
		t.Errorf("sets %v, addresses %v, device %q", after.Sets, after.Addresses, cs.Device)
	}
	for _, tbl := range after.IPTables.Tables {
		for _, c := range tbl.Chains {
			if ipvsOwn.Chains.Owns(tbl.Name, c.Name) {
				t.Errorf("chain %s/%s left", tbl.Name, c.Name)
			}
		}
	}
}
