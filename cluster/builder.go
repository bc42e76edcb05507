package cluster

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Builder is Build for a caller that builds one node's tables again and
// again from snapshots that mostly repeat, as apply --watch does on every
// change. It remembers what it built from each Service and EndpointSlice,
// recognising an object by its UID and resourceVersion (which the API
// server changes on every write), and the next Build reuses that for
// every Service whose Service object, EndpointSlices, node name and zone
// are all unchanged. A sync after a one-endpoint change thus parses,
// merges and categorizes one Service, not all of them. Another node
// counts as the same node for a Service whose endpoints name neither
// node (by nodeName or a forNodes hint), which is most Services: that is
// all a node changes in them (plan --all-nodes builds node after node);
// and another zone as the same zone for one whose endpoints have no
// forZones hint. An object without
// a UID or resourceVersion, as in a hand-written file, is built anew each
// time.
//
// Its Build gives exactly what the function Build gives, warnings
// included. The tables it returns share their endpoint lists with later
// ones: they are read-only. The zero value is ready to use; a Builder is
// not safe for concurrent use.
type Builder struct {
	prev memo
	// spare is the memo of the build before prev, emptied and filled
	// again by the next build: its maps keep their room, so a build of
	// 30k Services does not allocate four maps of that size anew.
	spare memo
	// members is groups' map of each Service's slices, emptied after
	// each use and kept for its room.
	members map[serviceKey][]member
	oneShot bool // Build's: nothing is kept for a next build
}

// memo is what one build made from each object, for the next one; a nil
// *memo keeps nothing.
type memo struct {
	services map[string]*serviceEntry   // by namespace/name
	slices   map[sliceKey]*sliceEntry   // by namespace/name and family
	groups   map[serviceKey]*groupEntry // a Service's merged endpoints, by family
	ports    map[serviceKey]*portsEntry // a Service's ports, by family
}

// reuse empties spare for this build's memo, or, the first time, makes
// one sized for about as many objects as the build before had.
func reuse(spare, prev *memo) *memo {
	if spare.services == nil {
		return &memo{services: make(map[string]*serviceEntry, len(prev.services)),
			slices: make(map[sliceKey]*sliceEntry, len(prev.slices)),
			groups: make(map[serviceKey]*groupEntry, len(prev.groups)),
			ports:  make(map[serviceKey]*portsEntry, len(prev.ports))}
	}
	clear(spare.services)
	clear(spare.slices)
	clear(spare.groups)
	clear(spare.ports)
	return spare
}

// version identifies one state of an object; the zero value is unknown.
type version struct{ uid, resourceVersion string }

func versionOf(m *metav1.ObjectMeta) version {
	if m.UID == "" || m.ResourceVersion == "" {
		return version{}
	}
	return version{string(m.UID), m.ResourceVersion}
}

func (v version) known() bool { return v.resourceVersion != "" }

type serviceKey struct {
	namespace, name string
	family          nodetable.Family
}

type sliceKey struct {
	name   string // namespace/name
	family nodetable.Family
}

// serviceEntry is a parsed Service (nil: not proxied) and its warnings.
type serviceEntry struct {
	version  version
	svc      *service
	warnings []Warning
}

// sliceEntry is what one slice gives in one family, read for nodeName
// (which decides which endpoints are local), but for its endpoints, which
// only its group keeps, merged.
type sliceEntry struct {
	version  version
	nodeName string
	service  string // the Service it belongs to; "": unusable
	warnings []Warning
	// nodes are the nodes its endpoints name, by nodeName or forNodes
	// hint: for any other node it reads the same as for nodeName.
	nodes []string
	// zoned: some endpoint has a forZones hint. Without one, the zone
	// decides nothing in categorize.
	zoned bool
}

// sameFor reports whether what the entry read for its node is what it
// reads for node: the same node, or one that it names no more than its
// own (neither is named, so no endpoint is local to either).
func (e *sliceEntry) sameFor(node string) bool {
	return e.nodeName == node || (!slices.Contains(e.nodes, node) && !slices.Contains(e.nodes, e.nodeName))
}

// groupEntry is the merged endpoints of one Service's slices.
type groupEntry struct {
	members   []*sliceEntry
	endpoints map[nodetable.ServicePortName][]nodetable.Endpoint
}

// zoned reports whether an endpoint of the group has a forZones hint.
func (g *groupEntry) zoned() bool {
	return g != nil && slices.ContainsFunc(g.members, func(m *sliceEntry) bool { return m.zoned })
}

// names reports whether an endpoint of the group names node. A nil group
// names none.
func (g *groupEntry) names(node string) bool {
	if g == nil {
		return false
	}
	for _, m := range g.members {
		if slices.Contains(m.nodes, node) {
			return true
		}
	}
	return false
}

// portsEntry is one Service's ports in one family, categorized for a node.
type portsEntry struct {
	service        *serviceEntry
	group          *groupEntry // nil: no endpoints
	nodeName, zone string
	ports          []nodetable.ServicePort
}

// Build is the package's Build, reusing what the last call built from
// objects that have not changed since.
func (m *Builder) Build(s *Snapshot, cfg Config) (*nodetable.Tables, []Warning, error) {
	if s == nil {
		s = &Snapshot{}
	}
	b := &builder{nodeName: cfg.NodeName}
	node, err := b.findNode(s.Nodes)
	if err != nil {
		return nil, nil, err
	}
	tables := &nodetable.Tables{IPv4: b.newTable(nodetable.IPv4), IPv6: b.newTable(nodetable.IPv6)}
	b.describeNode(tables, node, cfg.NodeIPs)
	b.addServiceCIDRs(tables, s, cfg.ServiceCIDRs)

	var next *memo // what this build leaves for the next one
	if !m.oneShot {
		next = reuse(&m.spare, &m.prev)
	}
	services := m.services(b, next, s.Services)
	bySlice := sortedSlices(s.EndpointSlices)
	for _, t := range []*nodetable.ServiceTable{tables.IPv4, tables.IPv6} {
		groups := m.groups(b, next, bySlice, t.Family)
		t.Ports = m.tablePorts(next, services, groups, t, b.nodeName)
	}
	if next != nil {
		m.prev, m.spare = *next, m.prev
	}
	return tables, b.warnings, nil
}

// services parses the proxied Services, in namespace/name order.
func (m *Builder) services(b *builder, next *memo, list []corev1.Service) []*serviceEntry {
	var out []*serviceEntry
	idx, names := sortedKeys(list, func(svc *corev1.Service) string { return objectName(&svc.ObjectMeta) })
	entries := make([]*serviceEntry, len(idx))
	forEach(len(idx), func(j int) {
		svc := &list[idx[j]]
		v := versionOf(&svc.ObjectMeta)
		e := m.prev.services[names[j]]
		if e == nil || !v.known() || e.version != v {
			sb := &builder{nodeName: b.nodeName}
			e = &serviceEntry{version: v, svc: sb.parseService(svc), warnings: sb.warnings}
		}
		entries[j] = e
	})
	for j, e := range entries {
		if e.version.known() && next != nil {
			next.services[names[j]] = e
		}
		b.warnings = append(b.warnings, e.warnings...)
		if e.svc != nil {
			out = append(out, e)
		}
	}
	return out
}

// member is one slice of a Service, as groups reads it: its entry, the
// object, and its ports when this build read them.
type member struct {
	entry *sliceEntry
	slice *discoveryv1.EndpointSlice
	ports []slicePorts // nil: not read in this build
}

// namedSlice is an EndpointSlice with its "namespace/name".
type namedSlice struct {
	slice *discoveryv1.EndpointSlice
	name  string
}

// sortedSlices lists the slices in namespace/name order, for both families.
func sortedSlices(list []discoveryv1.EndpointSlice) []namedSlice {
	idx, names := sortedKeys(list, func(s *discoveryv1.EndpointSlice) string { return objectName(&s.ObjectMeta) })
	out := make([]namedSlice, len(idx))
	for j, i := range idx {
		out[j] = namedSlice{&list[i], names[j]}
	}
	return out
}

// groups reads the slices of family f and merges them per Service. The
// slices are read, and the groups merged, on every CPU: in a one-shot
// build of a large cluster they are most of the work.
func (m *Builder) groups(b *builder, next *memo, list []namedSlice, f nodetable.Family) map[serviceKey]*groupEntry {
	reads := make([]member, len(list))
	forEach(len(list), func(i int) {
		if ns := list[i]; proxiedSlice(ns.slice, f) {
			reads[i].entry, reads[i].ports = m.slice(b.nodeName, ns.slice, sliceKey{ns.name, f})
			reads[i].slice = ns.slice
		}
	})
	if m.members == nil {
		m.members = make(map[serviceKey][]member, len(list))
	}
	members := m.members
	defer clear(members) // kept for its room, not its content
	for i, r := range reads {
		if r.entry == nil {
			continue
		}
		if next != nil && r.entry.version.known() {
			next.slices[sliceKey{list[i].name, f}] = r.entry
		}
		b.warnings = append(b.warnings, r.entry.warnings...)
		if r.entry.service != "" {
			k := serviceKey{r.slice.Namespace, r.entry.service, f}
			members[k] = append(members[k], r)
		}
	}
	keys := slices.Collect(maps.Keys(members))
	merged := make([]*groupEntry, len(keys))
	forEach(len(keys), func(i int) {
		g, ms := m.prev.groups[keys[i]], members[keys[i]]
		if g == nil || !sameMembers(g.members, ms) {
			g = mergeGroup(b.nodeName, f, ms)
		}
		merged[i] = g
	})
	// The memo for the next build holds this build's groups, so it serves
	// as the map to return, keyed by family too; a one-shot build has
	// none.
	groups := make(map[serviceKey]*groupEntry, len(keys))
	if next != nil {
		groups = next.groups
	}
	for i, k := range keys {
		groups[k] = merged[i]
	}
	return groups
}

func sameMembers(entries []*sliceEntry, ms []member) bool {
	return slices.EqualFunc(entries, ms, func(e *sliceEntry, m member) bool { return e == m.entry })
}

// mergeGroup merges the endpoints of one Service's slices. A slice whose
// entry the last build made is read again here: entries keep no
// endpoints, which would be one more copy of every endpoint in memory.
func mergeGroup(nodeName string, f nodetable.Family, ms []member) *groupEntry {
	g := &groupEntry{members: make([]*sliceEntry, len(ms))}
	parts := make([][]slicePorts, len(ms))
	for i, m := range ms {
		g.members[i], parts[i] = m.entry, m.ports
		if parts[i] == nil {
			quiet := &builder{nodeName: nodeName} // its warnings are in the entry
			_, parts[i], _ = quiet.readSlice(m.slice, f)
		}
	}
	g.endpoints = mergeSlices(parts)
	return g
}

// slice reads one slice, or takes what the last build read from it. It
// returns the slice's ports when it read them. It only reads the memo.
func (m *Builder) slice(nodeName string, slice *discoveryv1.EndpointSlice, k sliceKey) (*sliceEntry, []slicePorts) {
	v := versionOf(&slice.ObjectMeta)
	e := m.prev.slices[k]
	if e != nil && v.known() && e.version == v && e.sameFor(nodeName) {
		return e, nil
	}
	sb := &builder{nodeName: nodeName}
	name, read, ok := sb.readSlice(slice, k.family)
	if !ok {
		name = ""
	}
	e = &sliceEntry{version: v, nodeName: nodeName, service: name, warnings: sb.warnings}
	if !m.oneShot {
		e.nodes, e.zoned = namedNodes(read)
	}
	return e, read
}

// namedNodes lists the nodes that the endpoints read name, by nodeName or
// forNodes hint, each once, and says whether one has a forZones hint.
func namedNodes(read []slicePorts) (out []string, zoned bool) {
	for _, p := range read {
		for i := range p.endpoints {
			ep := &p.endpoints[i]
			zoned = zoned || len(ep.ZoneHints) > 0
			if ep.NodeName != "" && !slices.Contains(out, ep.NodeName) {
				out = append(out, ep.NodeName)
			}
			for _, n := range ep.NodeHints {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	return out, zoned
}

// tablePorts is the ports of services in t, in order, each Service's
// worked out on every CPU (portsOf), and keeps them in next.
func (m *Builder) tablePorts(next *memo, services []*serviceEntry, groups map[serviceKey]*groupEntry, t *nodetable.ServiceTable, nodeName string) []nodetable.ServicePort {
	entries := make([]*portsEntry, len(services))
	forEach(len(services), func(i int) { entries[i] = m.portsOf(services[i], groups, t, nodeName) })
	out := make([]nodetable.ServicePort, 0, len(services))
	for i, e := range entries {
		if next != nil {
			next.ports[serviceKey{services[i].svc.namespace, services[i].svc.name, t.Family}] = e
		}
		out = append(out, e.ports...)
	}
	sortPorts(out)
	return out
}

// portsOf gives a Service's ports in t's family with their endpoints
// categorized for the node, or takes them from the last build when
// nothing they depend on changed.
func (m *Builder) portsOf(svc *serviceEntry, groups map[serviceKey]*groupEntry, t *nodetable.ServiceTable, nodeName string) *portsEntry {
	k := serviceKey{svc.svc.namespace, svc.svc.name, t.Family}
	g := groups[k]
	if e := m.prev.ports[k]; e != nil && e.service == svc && e.group == g && (e.zone == t.Node.Zone || !g.zoned()) &&
		(e.nodeName == nodeName || (!g.names(nodeName) && !g.names(e.nodeName))) {
		return e
	}
	ports := svc.svc.portsFor(t.Family)
	for i := range ports {
		if g != nil {
			ports[i].AllEndpoints = g.endpoints[ports[i].Name]
		}
		categorize(&ports[i], nodeName, t.Node.Zone)
	}
	return &portsEntry{service: svc, group: g, nodeName: nodeName, zone: t.Node.Zone, ports: ports}
}
