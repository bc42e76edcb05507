package diff

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// ipvsOwn is the ipvs mode's ownership, without excluded ranges.
var ipvsOwn = render.IPVSOwnership(nil)

// ipvsRender renders a synthetic table of n Services x 3 endpoints (every
// tenth a NodePort on 192.168.77.10) in ipvs mode.
func ipvsRender(t *testing.T, n int, opts render.IPVSOptions) *ipvs.Ruleset {
	t.Helper()
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return render.IPVS(synthetic.Table(n, 3), cfg, opts)
}

// cloneIPVS returns a deep copy of rs through its text form.
func cloneIPVS(t *testing.T, rs *ipvs.Ruleset) *ipvs.Ruleset {
	t.Helper()
	c, err := ipvs.Parse([]byte(rs.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Sets {
		s.Comment = "" // the kernel keeps no set comments
	}
	return c
}

// replayIPVS applies cs to a copy of live the way the kernel would.
func replayIPVS(t *testing.T, live *ipvs.Ruleset, cs *IPVSChangeSet) *ipvs.Ruleset {
	t.Helper()
	out := cloneIPVS(t, live)
	for _, sc := range cs.Services {
		k := IPVSKey(&sc.Service)
		i := slices.IndexFunc(out.VirtualServers, func(v *ipvs.VirtualServer) bool { return IPVSKey(v) == k })
		switch sc.Verb {
		case IPVSAddService:
			vs := sc.Service
			out.VirtualServers = append(out.VirtualServers, &vs)
			i = len(out.VirtualServers) - 1
		case IPVSDeleteService:
			out.VirtualServers = slices.Delete(out.VirtualServers, i, i+1)
			continue
		case IPVSEditService:
			rs := out.VirtualServers[i].RealServers
			vs := sc.Service
			vs.RealServers = rs
			out.VirtualServers[i] = &vs
		}
		vs := out.VirtualServers[i]
		for _, d := range sc.Dests {
			j := slices.IndexFunc(vs.RealServers, func(r ipvs.RealServer) bool { return r.Address == d.Dest.Address && r.Port == d.Dest.Port })
			switch d.Verb {
			case IPVSAddDest:
				vs.RealServers = append(vs.RealServers, d.Dest)
			case IPVSEditDest, IPVSDrainDest:
				vs.RealServers[j] = d.Dest
			case IPVSDeleteDest:
				vs.RealServers = slices.Delete(vs.RealServers, j, j+1)
			}
		}
	}
	for _, sc := range cs.Sets {
		switch sc.Verb {
		case IPVSCreateSet:
			s := sc.Set
			s.Entries = slices.Clone(sc.Add)
			out.Sets = append(out.Sets, &s)
		case IPVSDestroySet:
			out.Sets = slices.DeleteFunc(out.Sets, func(s *ipvs.Set) bool { return s.Name == sc.Set.Name })
		case IPVSFillSet:
			s := out.Set(sc.Set.Name)
			s.Entries = append(slices.DeleteFunc(s.Entries, func(e string) bool { return slices.Contains(sc.Del, e) }), sc.Add...)
		}
	}
	out.Addresses = append(slices.DeleteFunc(out.Addresses, func(a netip.Addr) bool { return slices.Contains(cs.DelAddresses, a) }), cs.AddAddresses...)
	out.IPTables = ReplayIPTables(out.IPTables, cs.IPTables)
	return out
}

func emptyLive(f nodetable.Family) *ipvs.Ruleset {
	return &ipvs.Ruleset{Family: f, IPTables: EmptyIPTables(f)}
}

// TestIPVSFromEmptyThenNothing applies a render to an empty kernel and
// checks that the counts match the render and that a second diff is empty.
func TestIPVSFromEmptyThenNothing(t *testing.T) {
	desired := ipvsRender(t, 40, render.IPVSOptions{})
	cs := IPVS(desired, emptyLive(nodetable.IPv4), ipvsOwn, IPVSOptions{})
	s := cs.Summary()
	dests, entries := 0, 0
	for _, vs := range desired.VirtualServers {
		dests += len(vs.RealServers)
	}
	for _, set := range desired.Sets {
		entries += len(set.Entries)
	}
	if s.ServicesAdded != len(desired.VirtualServers) || s.DestinationsAdded != dests ||
		s.ElementsAdded != entries || s.AddressesAdded != len(desired.Addresses) || cs.Device != IPVSCreateDevice {
		t.Errorf("summary %v, device %q; want %d virtual servers, %d real servers, %d entries, %d addresses and the device",
			s, cs.Device, len(desired.VirtualServers), dests, entries, len(desired.Addresses))
	}
	if s.ChainsAdded == 0 || s.ServicesDeleted+s.DestinationsDeleted+s.ElementsRemoved+s.AddressesRemoved != 0 {
		t.Errorf("summary %v: want helper chains added and nothing removed", s)
	}
	live := replayIPVS(t, emptyLive(nodetable.IPv4), cs)
	again := IPVS(desired, live, ipvsOwn, IPVSOptions{DeviceExists: true})
	if !again.Empty() {
		t.Errorf("second diff not empty: %s", planOf(t, again))
	}
}

func planOf(t *testing.T, cs *IPVSChangeSet) string {
	t.Helper()
	var b strings.Builder
	if err := cs.WriteText(&b, "kernel"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestIPVSAttributesChangeInPlace changes the scheduler, the persistence
// and the flags of every virtual server and checks that each is edited,
// never deleted and re-added, and that its real servers stay.
func TestIPVSAttributesChangeInPlace(t *testing.T) {
	base := ipvsRender(t, 20, render.IPVSOptions{})
	for name, mutate := range map[string]func(*ipvs.VirtualServer){
		"scheduler":   func(vs *ipvs.VirtualServer) { vs.Scheduler = "wlc" },
		"persistence": func(vs *ipvs.VirtualServer) { vs.Flags |= ipvs.FlagPersistent; vs.Timeout = 10800 },
		"timeout":     func(vs *ipvs.VirtualServer) { vs.Flags |= ipvs.FlagPersistent; vs.Timeout = 60 },
		"mh":          func(vs *ipvs.VirtualServer) { vs.Scheduler = "mh"; vs.Flags |= ipvs.FlagSched2 },
	} {
		t.Run(name, func(t *testing.T) {
			live := cloneIPVS(t, base)
			if name == "timeout" {
				for _, vs := range live.VirtualServers {
					vs.Flags, vs.Timeout = ipvs.FlagPersistent, 10800
				}
			}
			desired := cloneIPVS(t, base)
			for _, vs := range desired.VirtualServers {
				mutate(vs)
			}
			cs := IPVS(desired, live, ipvsOwn, IPVSOptions{DeviceExists: true})
			if len(cs.Services) != len(desired.VirtualServers) {
				t.Fatalf("%d service changes, want one per virtual server (%d)", len(cs.Services), len(desired.VirtualServers))
			}
			for _, sc := range cs.Services {
				if sc.Verb != IPVSEditService || len(sc.Dests) != 0 || sc.Old == nil {
					t.Fatalf("change %+v: want an in-place edit and no real server change", sc)
				}
			}
			if s := cs.Summary(); s.ServicesChanged != len(desired.VirtualServers) || s.ServicesAdded+s.ServicesDeleted != 0 {
				t.Errorf("summary %v", s)
			}
			if text := planOf(t, cs); !strings.Contains(text, "changed in place") || strings.Contains(text, "stale virtual server") {
				t.Errorf("plan:\n%s", text)
			}
			if again := IPVS(desired, replayIPVS(t, live, cs), ipvsOwn, IPVSOptions{DeviceExists: true}); !again.Empty() {
				t.Errorf("not converged: %s", planOf(t, again))
			}
		})
	}
}
