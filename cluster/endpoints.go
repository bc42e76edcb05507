package cluster

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// endpointsByPort reads the EndpointSlices of family f into the endpoints of
// each Service port, as kube-proxy's EndpointSliceCache does: slices are
// matched to ports by port name and protocol, endpoints are deduplicated by
// "ip:port" (a terminating endpoint never replaces another), and each list
// is sorted by Endpoint.String(). Slices are read in namespace/name order,
// which fixes the one thing kube-proxy leaves to map order: which of two
// non-terminating duplicates is kept.
func (b *builder) endpointsByPort(all []discoveryv1.EndpointSlice, f nodetable.Family) map[nodetable.ServicePortName][]nodetable.Endpoint {
	sets := map[nodetable.ServicePortName]map[string]nodetable.Endpoint{}
	for _, i := range sortedBy(all, func(s *discoveryv1.EndpointSlice) string { return objectName(&s.ObjectMeta) }) {
		slice := &all[i]
		if string(slice.AddressType) != string(f) {
			continue // including FQDN, which kube-proxy ignores
		}
		if _, ok := slice.Labels[labelServiceProxyName]; ok {
			continue
		}
		if _, ok := slice.Labels[labelHeadless]; ok {
			continue
		}
		b.addSlice(sets, slice, f)
	}
	out := make(map[nodetable.ServicePortName][]nodetable.Endpoint, len(sets))
	for name, set := range sets {
		if len(set) == 0 {
			continue
		}
		list := make([]nodetable.Endpoint, 0, len(set))
		for _, ep := range set {
			list = append(list, ep)
		}
		sortEndpoints(list)
		out[name] = list
	}
	return out
}

func sortEndpoints(eps []nodetable.Endpoint) {
	slices.SortFunc(eps, func(a, b nodetable.Endpoint) int { return cmp.Compare(a.String(), b.String()) })
}

// addSlice adds the endpoints of one slice to sets.
func (b *builder) addSlice(sets map[nodetable.ServicePortName]map[string]nodetable.Endpoint, slice *discoveryv1.EndpointSlice, f nodetable.Family) {
	object := "endpointslice " + objectName(&slice.ObjectMeta)
	if !b.checkMeta(object, &slice.ObjectMeta, endpointSliceName) {
		return
	}
	serviceName := slice.Labels[discoveryv1.LabelServiceName]
	if serviceName == "" {
		b.warn(object, "no %s label: skipped", discoveryv1.LabelServiceName)
		return
	}
	if errs := validation.IsValidLabelValue(serviceName); len(errs) > 0 {
		b.warn(object, "invalid %s label %q (%s): skipped", discoveryv1.LabelServiceName, serviceName, strings.Join(errs, "; "))
		return
	}
	endpoints := b.sliceEndpoints(object, slice, f)
	for i, port := range slice.Ports {
		switch {
		case port.Name == nil:
			b.warn(object, "ports[%d] has no name: ignored", i)
			continue
		case len(portNameErrors(*port.Name)) > 0:
			b.warn(object, "invalid ports[%d].name %q (%s): ignored", i, *port.Name, strings.Join(portNameErrors(*port.Name), "; "))
			continue
		case port.Port == nil || *port.Port == 0:
			b.warn(object, "ports[%d] (%q) has no port number: ignored", i, *port.Name)
			continue
		case !validPort(*port.Port):
			b.warn(object, "invalid ports[%d].port %d: ignored", i, *port.Port)
			continue
		}
		// A nil protocol is TCP, the API default (kube-proxy would crash on it).
		var protocol string
		if port.Protocol != nil {
			protocol = string(*port.Protocol)
		}
		proto, ok := parseProtocol(protocol)
		if !ok {
			b.warn(object, "invalid ports[%d].protocol %q: ignored", i, protocol)
			continue
		}
		name := nodetable.ServicePortName{Namespace: slice.Namespace, Name: serviceName, Port: *port.Name, Protocol: proto}
		set := sets[name]
		if set == nil {
			set = map[string]nodetable.Endpoint{}
			sets[name] = set
		}
		for _, ep := range endpoints {
			ep.Port = *port.Port
			key := ep.String()
			if _, exists := set[key]; !exists || !ep.Terminating {
				set[key] = ep
			}
		}
	}
}

// sliceEndpoints converts the usable endpoints of a slice, without ports.
// Like kube-proxy, only the first address counts, and endpoints without
// addresses are skipped; an invalid first address, or one of the wrong
// family (which the API rejects), skips the endpoint with a warning.
func (b *builder) sliceEndpoints(object string, slice *discoveryv1.EndpointSlice, f nodetable.Family) []nodetable.Endpoint {
	var out []nodetable.Endpoint
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
