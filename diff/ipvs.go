package diff

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// IPVSVerb is what a change does to a virtual server or a real server.
type IPVSVerb string

const (
	IPVSAddService    IPVSVerb = "add-service"    // ipvsadm -A
	IPVSEditService   IPVSVerb = "edit-service"   // ipvsadm -E: scheduler, flags or timeout, in place
	IPVSDeleteService IPVSVerb = "delete-service" // ipvsadm -D
	// IPVSKeepService marks a virtual server whose attributes stay while some
	// of its real servers change.
	IPVSKeepService IPVSVerb = "keep-service"

	IPVSAddDest    IPVSVerb = "add-destination"    // ipvsadm -a
	IPVSEditDest   IPVSVerb = "edit-destination"   // ipvsadm -e: weight or forwarding method
	IPVSDrainDest  IPVSVerb = "drain-destination"  // ipvsadm -e -w 0: gone from the desired state, connections still open
	IPVSDeleteDest IPVSVerb = "delete-destination" // ipvsadm -d
)

// IPVSServiceKey names a virtual server: protocol, address and port.
type IPVSServiceKey struct {
	Protocol ipvs.Protocol  `json:"protocol"`
	Address  netip.AddrPort `json:"address"`
}

// IPVSKey returns the key of a virtual server.
func IPVSKey(vs *ipvs.VirtualServer) IPVSServiceKey {
	return IPVSServiceKey{vs.Protocol, netip.AddrPortFrom(vs.Address, vs.Port)}
}

// IPVSDestKey names one real server of one virtual server.
type IPVSDestKey struct {
	Service IPVSServiceKey `json:"service"`
	Dest    netip.AddrPort `json:"dest"`
}

// IPVSConns are a real server's connection counts, as ipvsadm -L lists them
// (ActiveConn, InActConn).
type IPVSConns struct {
	Active   int `json:"active"`
	Inactive int `json:"inactive"`
}

// Total is every connection IPVS still tracks for the real server.
func (c IPVSConns) Total() int { return c.Active + c.Inactive }

// IPVSDestChange is one change to a real server.
type IPVSDestChange struct {
	Verb IPVSVerb `json:"verb"`
	// Dest is the real server as it will be (add, edit, drain) or as it
	// is (delete, and the Draining list).
	Dest ipvs.RealServer `json:"dest"`
	// Old is the live real server of an edit or a drain.
	Old *ipvs.RealServer `json:"old,omitempty"`
	// Conns are the live connection counts of a drain, a delete or a
	// draining real server.
	Conns *IPVSConns `json:"conns,omitempty"`
}

// IPVSServiceChange is everything that changes on one virtual server.
type IPVSServiceChange struct {
	Verb IPVSVerb `json:"verb"`
	// Service holds the virtual server's attributes as they will be (or,
	// for delete, as they are), without its real servers.
	Service ipvs.VirtualServer `json:"service"`
	// Old holds the live attributes of an edit.
	Old *ipvs.VirtualServer `json:"old,omitempty"`
	// Dests are the real server changes: adds and edits first, then drains
	// and deletes. For delete-service they list the real servers that go
	// with it; deleting the virtual server removes them.
	Dests []IPVSDestChange `json:"destinations,omitempty"`
}

// IPVSDraining is a real server left at weight 0 until its connections close.
type IPVSDraining struct {
	Service ipvs.VirtualServer `json:"service"`
	Dest    ipvs.RealServer    `json:"dest"`
	Conns   IPVSConns          `json:"conns"`
}

// IPVSSetVerb is what happens to an ipset as a whole.
type IPVSSetVerb string

const (
	IPVSCreateSet  IPVSSetVerb = "create-set"
	IPVSDestroySet IPVSSetVerb = "destroy-set"
	// IPVSFillSet marks an existing set whose entries change.
	IPVSFillSet IPVSSetVerb = "change-entries"
)

// IPVSSetChange is everything that changes in one ipset.
type IPVSSetChange struct {
	Verb IPVSSetVerb `json:"verb"`
	// Set holds the set's attributes (the desired ones, or the live ones
	// for destroy), without its entries.
	Set ipvs.Set `json:"set"`
	// Add and Del are the entries added and removed, sorted.
	Add []string `json:"add,omitempty"`
	Del []string `json:"del,omitempty"`
}

// IPVSDeviceChange is what happens to the kube-ipvs0 dummy interface.
type IPVSDeviceChange string

const (
	IPVSCreateDevice IPVSDeviceChange = "create"
	IPVSDeleteDevice IPVSDeviceChange = "delete"
)

// IPVSChangeSet is every change for one family in ipvs mode. apply runs
// it in three phases so that no traffic is blackholed midway: first what
// is added or changed in place (the device, sets and their new entries,
// virtual and real servers, then the addresses that make them reachable),
// then the helper iptables chains, which may now reference the new sets,
// then what is removed (drains, real and virtual servers, addresses,
// entries, sets no rule references any more, the device).
type IPVSChangeSet struct {
	Family   nodetable.Family    `json:"family"`
	Device   IPVSDeviceChange    `json:"device,omitempty"`
	Services []IPVSServiceChange `json:"services,omitempty"`
	Sets     []IPVSSetChange     `json:"sets,omitempty"`
	// AddAddresses and DelAddresses are bound to or unbound from kube-ipvs0.
	AddAddresses []netip.Addr       `json:"addAddresses,omitempty"`
	DelAddresses []netip.Addr       `json:"delAddresses,omitempty"`
	IPTables     *IPTablesChangeSet `json:"iptables"`
	Draining     []IPVSDraining     `json:"draining,omitempty"`
	// Conflicts are owned sets whose type, family or range in the kernel
	// differ from the desired ones; apply refuses to run until a reset.
	Conflicts []string `json:"conflicts,omitempty"`
}

// Empty reports whether there is nothing to change. Real servers that are
// already draining are not changes: they wait for their connections.
func (cs *IPVSChangeSet) Empty() bool {
	return cs.Device == "" && len(cs.Services) == 0 && len(cs.Sets) == 0 &&
		len(cs.AddAddresses) == 0 && len(cs.DelAddresses) == 0 &&
		len(cs.Conflicts) == 0 && (cs.IPTables == nil || cs.IPTables.Empty())
}

// IPVSOptions are what the ipvs diff needs besides the two rulesets.
type IPVSOptions struct {
	// Conns are the live real servers' connection counts; a real server
	// without an entry has none.
	Conns map[IPVSDestKey]IPVSConns
	// DeviceExists reports whether kube-ipvs0 exists in the kernel.
	DeviceExists bool
	// Reset removes everything the tool owns, kube-ipvs0 included; the
	// desired ruleset is then EmptyIPVS.
	Reset bool
}

// EmptyIPVS is the desired state of `reset`: no virtual servers, sets or
// addresses, and no helper chains.
func EmptyIPVS(family nodetable.Family) *ipvs.Ruleset {
	return &ipvs.Ruleset{Family: family, IPTables: EmptyIPTables(family)}
}

// IPVS compares desired (a render) with live (read from the kernel) and
// returns the changes that make the owned part of live equal to desired.
//
// What the tool owns (see ipvsOwner): the virtual servers whose address is
// bound to kube-ipvs0 (every ClusterIP, external IP and load-balancer IP,
// live or desired) and those on a port of kube-proxy's NodePort sets (the
// NodePort virtual servers on node IPs), outside own.ExcludeCIDRs; all
// addresses on kube-ipvs0; kube-proxy's ipsets by name; the ipvs mode's
// helper chains. kube-proxy itself deletes every virtual server of its
// family outside the excluded ranges; the tool leaves other programs'
// virtual servers alone.
//
// A real server that leaves the desired state follows kube-proxy's graceful
// termination: a TCP one with open connections is set to weight 0
// (IPVSDrainDest) and deleted by a later apply once IPVS tracks none; UDP and
// SCTP ones, and idle ones, are deleted at once. A draining real server
// that is desired again gets its weight back in place.
func IPVS(desired, live *ipvs.Ruleset, own *ipvs.Ownership, opts IPVSOptions) *IPVSChangeSet {
	cs := &IPVSChangeSet{Family: desired.Family}
	ipvsDiffServices(cs, desired, live, newIPVSOwner(desired, live, own), opts.Conns)
	ipvsDiffSets(cs, desired, live, own.Sets[desired.Family])
	cs.AddAddresses, cs.DelAddresses = ipvsDiffAddrs(desired.Addresses, live.Addresses)
	switch {
	case opts.Reset && opts.DeviceExists:
		cs.Device = IPVSDeleteDevice
	case !opts.Reset && !opts.DeviceExists:
		cs.Device = IPVSCreateDevice
	}
	liveIPT := live.IPTables
	if liveIPT == nil {
		liveIPT = EmptyIPTables(desired.Family)
	}
	wantIPT := desired.IPTables
	if wantIPT == nil {
		wantIPT = EmptyIPTables(desired.Family)
	}
	cs.IPTables = IPTables(wantIPT, liveIPT, own.Chains)
	return cs
}

// ipvsOwner decides which live virtual servers are the tool's.
type ipvsOwner struct {
	own       *ipvs.Ownership
	bound     map[netip.Addr]bool
	nodePorts map[IPVSServiceKey]bool // SCTP NodePorts: address and port
	portOnly  map[ipvs.Protocol]map[uint16]bool
}

func newIPVSOwner(desired, live *ipvs.Ruleset, own *ipvs.Ownership) *ipvsOwner {
	o := &ipvsOwner{own: own, bound: map[netip.Addr]bool{}, nodePorts: map[IPVSServiceKey]bool{},
		portOnly: map[ipvs.Protocol]map[uint16]bool{ipvs.TCP: {}, ipvs.UDP: {}}}
	for _, rs := range []*ipvs.Ruleset{desired, live} {
		for _, a := range rs.Addresses {
			o.bound[a] = true
		}
		o.addNodePorts(rs)
	}
	return o
}

// addNodePorts records the NodePorts listed in a ruleset's NodePort sets.
func (o *ipvsOwner) addNodePorts(rs *ipvs.Ruleset) {
	for proto, name := range o.own.PortSets[rs.Family] {
		if s := rs.Set(name); s != nil && o.portOnly[proto] != nil {
			for _, e := range s.Entries {
				if p, ok := ipvsParsePort(e); ok {
					o.portOnly[proto][p] = true
				}
			}
		}
	}
	if s := rs.Set(o.own.AddrPortSets[rs.Family]); s != nil {
		for _, e := range s.Entries {
			if k, ok := ipvsParseIPProtoPort(e); ok {
				o.nodePorts[k] = true
			}
		}
	}
}

// owns reports whether a live virtual server that is not desired may be
// deleted.
func (o *ipvsOwner) owns(vs *ipvs.VirtualServer) bool {
	if o.own.Excluded(vs.Address) {
		return false
	}
	return o.bound[vs.Address] || o.portOnly[vs.Protocol][vs.Port] || o.nodePorts[IPVSKey(vs)]
}

func ipvsDiffServices(cs *IPVSChangeSet, desired, live *ipvs.Ruleset, own *ipvsOwner, conns map[IPVSDestKey]IPVSConns) {
	liveBy := map[IPVSServiceKey]*ipvs.VirtualServer{}
	for _, vs := range live.VirtualServers {
		liveBy[IPVSKey(vs)] = vs
	}
	wanted := map[IPVSServiceKey]bool{}
	for _, d := range desired.VirtualServers {
		k := IPVSKey(d)
		wanted[k] = true
		l := liveBy[k]
		if l == nil {
			sc := IPVSServiceChange{Verb: IPVSAddService, Service: ipvsAttrs(d)}
			for _, r := range d.RealServers {
				sc.Dests = append(sc.Dests, IPVSDestChange{Verb: IPVSAddDest, Dest: r})
			}
			cs.Services = append(cs.Services, sc)
			continue
		}
		sc := IPVSServiceChange{Verb: IPVSKeepService, Service: ipvsAttrs(d)}
		if !ipvsSameAttrs(d, l) {
			old := ipvsAttrs(l)
			sc.Verb, sc.Old = IPVSEditService, &old
		}
		var draining []IPVSDraining
		sc.Dests, draining = ipvsDiffDests(k, d, l, conns)
		cs.Draining = append(cs.Draining, draining...)
		if sc.Verb != IPVSKeepService || len(sc.Dests) > 0 {
			cs.Services = append(cs.Services, sc)
		}
	}
	for _, l := range live.VirtualServers {
		switch {
		case wanted[IPVSKey(l)]:
		case own.owns(l):
			sc := IPVSServiceChange{Verb: IPVSDeleteService, Service: ipvsAttrs(l)}
			for _, r := range l.RealServers {
				c := conns[IPVSDestKey{IPVSKey(l), netip.AddrPortFrom(r.Address, r.Port)}]
				sc.Dests = append(sc.Dests, IPVSDestChange{Verb: IPVSDeleteDest, Dest: r, Conns: &c})
			}
			cs.Services = append(cs.Services, sc)
		}
	}
	slices.SortStableFunc(cs.Services, func(a, b IPVSServiceChange) int { return ipvsCompareKeys(IPVSKey(&a.Service), IPVSKey(&b.Service)) })
}

// ipvsDiffDests compares the real servers of one virtual server.
func ipvsDiffDests(k IPVSServiceKey, d, l *ipvs.VirtualServer, conns map[IPVSDestKey]IPVSConns) ([]IPVSDestChange, []IPVSDraining) {
	liveBy := map[netip.AddrPort]ipvs.RealServer{}
	for _, r := range l.RealServers {
		liveBy[netip.AddrPortFrom(r.Address, r.Port)] = r
	}
	var changes []IPVSDestChange
	wanted := map[netip.AddrPort]bool{}
	for _, r := range d.RealServers {
		ap := netip.AddrPortFrom(r.Address, r.Port)
		wanted[ap] = true
		old, ok := liveBy[ap]
		switch {
		case !ok:
			changes = append(changes, IPVSDestChange{Verb: IPVSAddDest, Dest: r})
		case old != r:
			changes = append(changes, IPVSDestChange{Verb: IPVSEditDest, Dest: r, Old: &old})
		}
	}
	var draining []IPVSDraining
	for _, r := range l.RealServers {
		ap := netip.AddrPortFrom(r.Address, r.Port)
		if wanted[ap] {
			continue
		}
		c := conns[IPVSDestKey{k, ap}]
		switch {
		case k.Protocol != ipvs.TCP || c.Total() == 0:
			// kube-proxy: UDP and SCTP get no graceful termination (their
			// flows expire on the next packet with expire_nodest_conn).
			changes = append(changes, IPVSDestChange{Verb: IPVSDeleteDest, Dest: r, Conns: &c})
		case r.Weight != 0:
			old := r
			r.Weight = 0
			changes = append(changes, IPVSDestChange{Verb: IPVSDrainDest, Dest: r, Old: &old, Conns: &c})
		default:
			draining = append(draining, IPVSDraining{Service: ipvsAttrs(d), Dest: r, Conns: c})
		}
	}
	return changes, draining
}

// ipvsAttrs returns a virtual server without its real servers.
func ipvsAttrs(vs *ipvs.VirtualServer) ipvs.VirtualServer {
	out := *vs
	out.RealServers = nil
	return out
}

func ipvsSameAttrs(a, b *ipvs.VirtualServer) bool {
	return a.Scheduler == b.Scheduler && a.Flags == b.Flags && a.Timeout == b.Timeout
}

func ipvsCompareKeys(a, b IPVSServiceKey) int {
	return cmp.Or(a.Address.Addr().Compare(b.Address.Addr()), cmp.Compare(a.Address.Port(), b.Address.Port()), cmp.Compare(a.Protocol, b.Protocol))
}

// ipvsDiffAddrs returns the addresses to bind and to unbind, sorted.
func ipvsDiffAddrs(desired, live []netip.Addr) (add, del []netip.Addr) {
	have := map[netip.Addr]bool{}
	for _, a := range live {
		have[a] = true
	}
	want := map[netip.Addr]bool{}
	for _, a := range desired {
		want[a] = true
		if !have[a] {
			add = append(add, a)
		}
	}
	for _, a := range live {
		if !want[a] {
			del = append(del, a)
		}
	}
	slices.SortFunc(add, netip.Addr.Compare)
	slices.SortFunc(del, netip.Addr.Compare)
	return slices.Compact(add), slices.Compact(del)
}

// OwnedIPVS returns the part of a live ruleset that the diff against
// desired reads: the virtual servers that are desired or owned, the owned
// sets (the only ones read), kube-ipvs0's addresses and the owned helper
// chains. A saved plan fingerprints it.
func OwnedIPVS(desired, live *ipvs.Ruleset, own *ipvs.Ownership) *ipvs.Ruleset {
	o := newIPVSOwner(desired, live, own)
	out := &ipvs.Ruleset{Family: live.Family, Sets: live.Sets, Addresses: live.Addresses}
	for _, vs := range live.VirtualServers {
		if desired.VirtualServer(vs.Protocol, vs.Address, vs.Port) != nil || o.owns(vs) {
			out.VirtualServers = append(out.VirtualServers, vs)
		}
	}
	if live.IPTables != nil {
		out.IPTables = OwnedIPTables(live.IPTables, own.Chains)
	}
	return out
}
