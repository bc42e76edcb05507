package cluster

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Label keys kube-proxy's informers filter on (cmd/kube-proxy/app/server.go).
const (
	// labelServiceProxyName marks Services (and their EndpointSlices) that
	// another proxy implements; kube-proxy ignores both.
	labelServiceProxyName = "service.kubernetes.io/service-proxy-name"
	// labelHeadless marks the EndpointSlices of headless Services.
	labelHeadless = corev1.IsHeadlessService
)

// defaultAffinityTimeoutSeconds is the API's default for
// sessionAffinityConfig.clientIP.timeoutSeconds (3 hours).
const defaultAffinityTimeoutSeconds = 10800

// Config says which node to build the tables for and what to take from
// configuration rather than from the snapshot, like kube-proxy's flags.
type Config struct {
	// NodeName is the node the tables are for (kube-proxy's --hostname-override).
	// When empty and the snapshot holds exactly one Node, that Node is used.
	NodeName string
	// NodeIPs overrides the node's IPs (kube-proxy's --node-ip). When empty they
	// come from the Node's status.addresses: the first InternalIP, else
	// ExternalIP, of each family, as kube-proxy's GetNodeHostIPs picks them.
	NodeIPs []netip.Addr
	// ServiceCIDRs overrides the cluster's Service ranges. When empty they are
	// the spec.cidrs of the snapshot's ServiceCIDR objects.
	ServiceCIDRs []netip.Prefix
}

// Warning is something Build or Decode skipped or tolerated, naming the
// object it is about.
type Warning struct {
	Object  string // "service ns1/web", "endpointslice ns1/web-abc", "snapshot.yaml: document 3 (Pod ns/x)"
	Message string // `invalid clusterIP "10.0.0.300": skipped`
}

// String is "object: message". An object name that the API server would
// refuse can hold anything; it is quoted when it is not plain printable
// text, so that a warning cannot forge lines of its own.
func (w Warning) String() string {
	if w.Object == "" {
		return w.Message
	}
	obj := w.Object
	if strings.ContainsFunc(obj, func(r rune) bool { return !unicode.IsPrint(r) }) {
		obj = strconv.Quote(obj)
	}
	return obj + ": " + w.Message
}

// Build computes, for the node cfg.NodeName, the Service ports kube-proxy
// v1.37 would program and the endpoints each traffic policy would use.
//
// Invalid data never aborts the build: the object, port, address or field at
// fault is left out with a Warning, and everything else is built. The only
// errors are about the node: a snapshot that has Nodes but not this one, or
// no node name while the snapshot has several. The warnings returned are
// Build's own; those in s.Warnings, from loading, are not repeated.
func Build(s *Snapshot, cfg Config) (*nodetable.Tables, []Warning, error) {
	b := Builder{oneShot: true}
	return b.Build(s, cfg)
}

// builder carries what Build accumulates.
type builder struct {
	nodeName string // the node endpoints are local to; may be empty
	warnings []Warning
}

func (b *builder) warn(object, format string, args ...any) {
	b.warnings = append(b.warnings, Warning{Object: object, Message: fmt.Sprintf(format, args...)})
}

func (b *builder) newTable(f nodetable.Family) *nodetable.ServiceTable {
	return &nodetable.ServiceTable{Family: f, Node: nodetable.Node{Name: b.nodeName}, Ports: []nodetable.ServicePort{}}
}

// sortedBy returns the indices of list in the order of key, so that Build's
// output and warnings do not depend on the order of a hand-built Snapshot.
func sortedBy[T any](list []T, key func(*T) string) []int {
	idx, _ := sortedKeys(list, key)
	return idx
}

// sortedKeys is sortedBy, also returning the key of each index. Each key
// is made once: made in the comparison, the keys were a fifth of Build's
// CPU at 10k Services.
func sortedKeys[T any](list []T, key func(*T) string) (idx []int, keys []string) {
	all := make([]string, len(list))
	idx = make([]int, len(list))
	for i := range idx {
		idx[i], all[i] = i, key(&list[i])
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(all[a], all[b]) })
	keys = make([]string, len(idx))
	for j, i := range idx {
		keys[j] = all[i]
	}
	return idx, keys
}

// sortPorts sorts a table's ports by name and protocol, making each name
// string once.
func sortPorts(ports []nodetable.ServicePort) {
	names := make([]string, len(ports))
	idx := make([]int, len(ports))
	for i := range ports {
		idx[i], names[i] = i, ports[i].Name.String()
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(names[a], names[b]), cmp.Compare(ports[a].Name.Protocol, ports[b].Name.Protocol))
	})
	sorted := make([]nodetable.ServicePort, len(ports))
	for j, i := range idx {
		sorted[j] = ports[i]
	}
	copy(ports, sorted)
}

// findNode returns the Node named b.nodeName, or nil when the snapshot has
// no Nodes at all.
func (b *builder) findNode(nodes []corev1.Node) (*corev1.Node, error) {
	if len(nodes) == 0 {
		b.warn(strings.TrimSpace("node "+b.nodeName), "the snapshot has no Node objects: node IPs come only from configuration, and there is no topology zone")
		return nil, nil
	}
	var names []string
	for i := range nodes {
		if nodes[i].Name == b.nodeName {
			return &nodes[i], nil
		}
		names = append(names, nodes[i].Name)
	}
	if b.nodeName == "" {
		if len(nodes) == 1 {
			b.nodeName = nodes[0].Name
			return &nodes[0], nil
		}
		return nil, fmt.Errorf("no node name given, and the snapshot has several Nodes (have: %s)", joinNames(names))
	}
	return nil, &NodeNotFoundError{Name: b.nodeName, Have: sortedNames(names)}
}

func joinNames(names []string) string { return strings.Join(sortedNames(names), ", ") }

func sortedNames(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return names
}

// describeNode fills in each table's Node: IPs, PodCIDRs and zone.
func (b *builder) describeNode(tables *nodetable.Tables, node *corev1.Node, override []netip.Addr) {
	for _, ip := range override {
		if !ip.IsValid() {
			b.warn("config", "invalid node IP %v: ignored", ip)
			continue
		}
		t := tables.ForFamily(nodetable.FamilyOf(ip))
		t.Node.IPs = append(t.Node.IPs, ip.Unmap())
	}
	if node == nil {
		return
	}
	object := "node " + node.Name
	zone := node.Labels[corev1.LabelTopologyZone]
	tables.IPv4.Node.Zone, tables.IPv6.Node.Zone = zone, zone
	if len(override) == 0 {
		for _, ip := range b.nodeHostIPs(node) {
			t := tables.ForFamily(nodetable.FamilyOf(ip))
			t.Node.IPs = append(t.Node.IPs, ip)
		}
	}
	cidrs, field := node.Spec.PodCIDRs, "podCIDRs"
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs, field = []string{node.Spec.PodCIDR}, "podCIDR"
	}
	for i, c := range cidrs {
		p, err := parsePrefix(c)
		if err != nil {
			b.warn(object, "invalid spec.%s[%d] %q: ignored", field, i, c)
			continue
		}
		t := tables.ForFamily(nodetable.FamilyOf(p.Addr()))
		t.Node.PodCIDRs = append(t.Node.PodCIDRs, p)
	}
}

// nodeHostIPs is kube-proxy's GetNodeHostIPs: InternalIPs first, then
// ExternalIPs; the first of them is primary, and the first one of the other
// family, if any, is secondary.
func (b *builder) nodeHostIPs(node *corev1.Node) []netip.Addr {
	var all []netip.Addr
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		for i, a := range node.Status.Addresses {
			if a.Type != typ {
				continue
			}
			ip, err := parseIP(a.Address)
			if err != nil {
				b.warn("node "+node.Name, "invalid status.addresses[%d] %q: ignored", i, a.Address)
				continue
			}
			all = append(all, ip)
		}
	}
	if len(all) == 0 {
		b.warn("node "+node.Name, "no InternalIP or ExternalIP in status.addresses: node IPs unknown")
		return nil
	}
	ips := all[:1]
	for _, ip := range all[1:] {
		if nodetable.FamilyOf(ip) != nodetable.FamilyOf(ips[0]) {
			return append(ips, ip)
		}
	}
	return ips
}

// addServiceCIDRs fills in each table's ServiceCIDRs, deduplicated and
// sorted (kube-proxy keeps them in a set). One that would drop the node's
// own traffic (serviceCIDRProblem) is left out with a warning. It runs
// after describeNode, so that the node's IPs are known.
func (b *builder) addServiceCIDRs(tables *nodetable.Tables, s *Snapshot, override []netip.Prefix) {
	type sourced struct {
		p      netip.Prefix
		object string
		field  string
	}
	var all []sourced
	for _, p := range override {
		all = append(all, sourced{p, "config", "service CIDR"})
	}
	if len(override) == 0 {
		for _, i := range sortedBy(s.ServiceCIDRs, func(c *networkingv1.ServiceCIDR) string { return c.Name }) {
			sc := &s.ServiceCIDRs[i]
			for j, c := range sc.Spec.CIDRs {
				p, err := parsePrefix(c)
				if err != nil {
					b.warn("servicecidr "+sc.Name, "invalid spec.cidrs[%d] %q: ignored", j, c)
					continue
				}
				all = append(all, sourced{p, "servicecidr " + sc.Name, fmt.Sprintf("spec.cidrs[%d]", j)})
			}
		}
	}
	for _, c := range all {
		if !c.p.IsValid() {
			b.warn(c.object, "invalid %s %v: ignored", c.field, c.p)
			continue
		}
		t := tables.ForFamily(nodetable.FamilyOf(c.p.Addr()))
		if why := serviceCIDRProblem(c.p, t.Node.IPs); why != "" {
			b.warn(c.object, "%s %s %s: ignored, so that the node keeps its own traffic there", c.field, c.p, why)
			continue
		}
		if !slices.Contains(t.ServiceCIDRs, c.p.Masked()) {
			t.ServiceCIDRs = append(t.ServiceCIDRs, c.p.Masked())
		}
	}
	for _, t := range []*nodetable.ServiceTable{tables.IPv4, tables.IPv6} {
		slices.SortFunc(t.ServiceCIDRs, comparePrefix)
	}
}

func comparePrefix(a, b netip.Prefix) int {
	return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Bits(), b.Bits()))
}
