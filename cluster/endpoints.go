package cluster

import (
	"bytes"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// slicePorts is what one EndpointSlice contributes to its Service: the
// endpoints of each of its valid ports, in the slice's order, not yet
// deduplicated against the Service's other slices.
type slicePorts struct {
	name      nodetable.ServicePortName
	endpoints []nodetable.Endpoint
}

// proxiedSlice says whether kube-proxy reads a slice in family f: not
// FQDN or the other family, not another proxy's, not a headless Service's.
func proxiedSlice(slice *discoveryv1.EndpointSlice, f nodetable.Family) bool {
	if string(slice.AddressType) != string(f) {
		return false
	}
	_, other := slice.Labels[labelServiceProxyName]
	_, headless := slice.Labels[labelHeadless]
	return !other && !headless
}

// readSlice reads one slice of family f: the Service it belongs to and the
// endpoints of each valid port; ok is false when the slice is unusable.
func (b *builder) readSlice(slice *discoveryv1.EndpointSlice, f nodetable.Family) (serviceName string, ports []slicePorts, ok bool) {
	object := "endpointslice " + objectName(&slice.ObjectMeta)
	if !b.checkMeta(object, &slice.ObjectMeta, endpointSliceName) {
		return "", nil, false
	}
	serviceName = slice.Labels[discoveryv1.LabelServiceName]
	if serviceName == "" {
		b.warn(object, "no %s label: skipped", discoveryv1.LabelServiceName)
		return "", nil, false
	}
	if errs := validation.IsValidLabelValue(serviceName); len(errs) > 0 {
		b.warn(object, "invalid %s label %q (%s): skipped", discoveryv1.LabelServiceName, serviceName, strings.Join(errs, "; "))
		return "", nil, false
	}
	endpoints := b.sliceEndpoints(object, slice, f)
	for i, port := range slice.Ports {
		number, proto, ok := b.slicePort(object, i, port)
		if !ok {
			continue
		}
		// The slice's last port entry takes the endpoints themselves, the
		// others a copy: most slices have one port, and at 10k Services
		// the copy was about a tenth of building the node's tables.
		eps := endpoints
		if i < len(slice.Ports)-1 {
			eps = slices.Clone(endpoints)
		}
		for j := range eps {
			eps[j].Port = number
		}
		name := nodetable.ServicePortName{Namespace: slice.Namespace, Name: serviceName, Port: *port.Name, Protocol: proto}
		ports = append(ports, slicePorts{name: name, endpoints: eps})
	}
	return serviceName, ports, true
}

// slicePort checks ports[i] of a slice, warning about what it leaves out.
func (b *builder) slicePort(object string, i int, port discoveryv1.EndpointPort) (int32, nodetable.Protocol, bool) {
	switch {
	case port.Name == nil:
		b.warn(object, "ports[%d] has no name: ignored", i)
		return 0, "", false
	case len(portNameErrors(*port.Name)) > 0:
		b.warn(object, "invalid ports[%d].name %q (%s): ignored", i, *port.Name, strings.Join(portNameErrors(*port.Name), "; "))
		return 0, "", false
	case port.Port == nil || *port.Port == 0:
		b.warn(object, "ports[%d] (%q) has no port number: ignored", i, *port.Name)
		return 0, "", false
	case !validPort(*port.Port):
		b.warn(object, "invalid ports[%d].port %d: ignored", i, *port.Port)
		return 0, "", false
	}
	// A nil protocol is TCP, the API default (kube-proxy would crash on it).
	var protocol string
	if port.Protocol != nil {
		protocol = string(*port.Protocol)
	}
	proto, ok := parseProtocol(protocol)
	if !ok {
		b.warn(object, "invalid ports[%d].protocol %q: ignored", i, protocol)
	}
	return *port.Port, proto, ok
}

// mergeSlices gives the endpoints of each Service port from the slices of
// one Service, as kube-proxy's EndpointSliceCache does: endpoints are
// deduplicated by "ip:port" (a terminating endpoint never replaces
// another), and each list is sorted by Endpoint.String(). The slices come
// in namespace/name order, which fixes the one thing kube-proxy leaves to
// map order: which of two non-terminating duplicates is kept.
func mergeSlices(parts [][]slicePorts) map[nodetable.ServicePortName][]nodetable.Endpoint {
	if out, ok := mergeOneSlice(parts); ok {
		return out
	}
	var names []nodetable.ServicePortName
	counts := map[nodetable.ServicePortName]int{}
	for _, ports := range parts {
		for _, p := range ports {
			if _, ok := counts[p.name]; !ok {
				names = append(names, p.name)
			}
			counts[p.name] += len(p.endpoints)
		}
	}
	lists := make(map[nodetable.ServicePortName][]*nodetable.Endpoint, len(names))
	for _, name := range names {
		lists[name] = make([]*nodetable.Endpoint, 0, counts[name])
	}
	for _, ports := range parts {
		for _, p := range ports {
			for i := range p.endpoints {
				lists[p.name] = append(lists[p.name], &p.endpoints[i])
			}
		}
	}
	out := make(map[nodetable.ServicePortName][]nodetable.Endpoint, len(names))
	for _, name := range names {
		if list := dedupeEndpoints(keyEndpoints(lists[name])); len(list) > 0 {
			out[name] = list
		}
	}
	return out
}

// mergeOneSlice is mergeSlices for the common case that needs no merging:
// one slice, whose ports have distinct names and whose endpoints are
// already in order, without duplicates. Its lists are the slice's own:
// readSlice makes each afresh and nothing else holds them. ok is false
// for anything else.
func mergeOneSlice(parts [][]slicePorts) (map[nodetable.ServicePortName][]nodetable.Endpoint, bool) {
	if len(parts) != 1 {
		return nil, false
	}
	ports := parts[0]
	for i, p := range ports {
		if !sortedUnique(p.endpoints) || slices.ContainsFunc(ports[:i], func(q slicePorts) bool { return q.name == p.name }) {
			return nil, false
		}
	}
	out := make(map[nodetable.ServicePortName][]nodetable.Endpoint, len(ports))
	for _, p := range ports {
		if len(p.endpoints) > 0 {
			out[p.name] = p.endpoints
		}
	}
	return out, true
}

// sortedUnique reports whether eps are in the order of their "ip:port"
// texts, each text once, without making the texts on the heap.
func sortedUnique(eps []nodetable.Endpoint) bool {
	var prev, cur [64]byte // any "ip:port"; a longer text would go to the heap
	last := []byte(nil)
	for i := range eps {
		key := eps[i].AppendKey(cur[:0])
		if i > 0 && bytes.Compare(last, key) >= 0 {
			return false
		}
		last = append(prev[:0], key...)
	}
	return true
}

// keyedEndpoint is an endpoint with its "ip:port" text, made once.
type keyedEndpoint struct {
	key string
	ep  *nodetable.Endpoint
}

// keyEndpoints pairs each endpoint with its String() text. The texts
// share one allocation: at 10k Services a text apiece was a tenth of a
// one-shot build.
func keyEndpoints(eps []*nodetable.Endpoint) []keyedEndpoint {
	per := len("255.255.255.255:65535")
	if len(eps) > 0 && eps[0].IP.Is6() { // a port's endpoints share a family
		per = len("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")
	}
	buf := make([]byte, 0, len(eps)*per)
	ends := make([]int, len(eps))
	for i, ep := range eps {
		buf = ep.AppendKey(buf)
		ends[i] = len(buf)
	}
	text := string(buf)
	out := make([]keyedEndpoint, len(eps))
	start := 0
	for i, end := range ends {
		out[i] = keyedEndpoint{text[start:end], eps[i]}
		start = end
	}
	return out
}

func byKey(a, b keyedEndpoint) int { return strings.Compare(a.key, b.key) }

// dedupeEndpoints sorts list by key and keeps one endpoint per key: of
// endpoints in list order, the first, replaced by each later one that is
// not terminating.
func dedupeEndpoints(list []keyedEndpoint) []nodetable.Endpoint {
	if !slices.IsSortedFunc(list, byKey) {
		slices.SortStableFunc(list, byKey)
	}
	out := make([]nodetable.Endpoint, 0, len(list))
	for i, e := range list {
		switch {
		case i == 0 || e.key != list[i-1].key:
			out = append(out, *e.ep)
		case !e.ep.Terminating:
			out[len(out)-1] = *e.ep
		}
	}
	return out
}

// sortEndpoints orders eps by their "ip:port" text, as kube-proxy does,
// making each text once rather than at every comparison.
func sortEndpoints(eps []nodetable.Endpoint) {
	refs := make([]*nodetable.Endpoint, len(eps))
	for i := range eps {
		refs[i] = &eps[i]
	}
	list := keyEndpoints(refs)
	if slices.IsSortedFunc(list, byKey) {
		return
	}
	slices.SortFunc(list, byKey)
	sorted := make([]nodetable.Endpoint, len(list))
	for i := range list {
		sorted[i] = *list[i].ep
	}
	copy(eps, sorted)
}

// sliceEndpoints converts the usable endpoints of a slice, without ports.
// Like kube-proxy, only the first address counts, and endpoints without
// addresses are skipped; an invalid first address, or one of the wrong
// family (which the API rejects), skips the endpoint with a warning.
func (b *builder) sliceEndpoints(object string, slice *discoveryv1.EndpointSlice, f nodetable.Family) []nodetable.Endpoint {
	out := make([]nodetable.Endpoint, 0, len(slice.Endpoints))
	for i := range slice.Endpoints {
		ep := &slice.Endpoints[i]
		if len(ep.Addresses) == 0 {
			b.warn(object, "endpoints[%d] has no addresses: ignored", i)
			continue
		}
		ip, err := parseIP(ep.Addresses[0])
		if err != nil {
			b.warn(object, "invalid endpoints[%d].addresses[0] %q: endpoint skipped", i, ep.Addresses[0])
			continue
		}
		if nodetable.FamilyOf(ip) != f {
			b.warn(object, "endpoints[%d].addresses[0] %q is not %s like the slice: endpoint skipped", i, ep.Addresses[0], f)
			continue
		}
		if why := unusableIP(ip, true); why != "" {
			b.warn(object, "endpoints[%d].addresses[0] %q %s: endpoint skipped", i, ep.Addresses[0], why)
			continue
		}
		e := nodetable.Endpoint{
			IP:          ip,
			Ready:       ep.Conditions.Ready == nil || *ep.Conditions.Ready,
			Serving:     ep.Conditions.Serving == nil || *ep.Conditions.Serving,
			Terminating: ep.Conditions.Terminating != nil && *ep.Conditions.Terminating,
		}
		if ep.NodeName != nil {
			e.NodeName = *ep.NodeName
			e.Local = b.nodeName != "" && e.NodeName == b.nodeName
		}
		if ep.Hints != nil {
			for _, z := range ep.Hints.ForZones {
				e.ZoneHints = appendUnique(e.ZoneHints, z.Name)
			}
			// PreferSameTrafficDistribution is GA and locked on in v1.37.
			for _, n := range ep.Hints.ForNodes {
				e.NodeHints = appendUnique(e.NodeHints, n.Name)
			}
			slices.Sort(e.ZoneHints)
			slices.Sort(e.NodeHints)
		}
		out = append(out, e)
	}
	return out
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
