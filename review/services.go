package review

import (
	"reflect"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// The changes a Service can undergo between two snapshots.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// ServiceChange is one Service that a change adds, removes or changes on a
// node, with the counts of the rules its own ports render differently
// (filled in by the caller, which renders; see Only).
type ServiceChange struct {
	// Service is "namespace/name".
	Service string       `json:"service"`
	Change  string       `json:"change"`
	Summary diff.Summary `json:"summary"`
}

// ChangedServices compares the node-local tables of two snapshots (every
// family) and returns the Services whose proxied ports differ, sorted by
// name: added when only newT has ports of it, removed when only oldT has,
// changed when a port differs in anything render reads (addresses, node
// ports, policies, endpoints as this node sees them). Node-wide changes
// (the node's addresses, the Service CIDRs) belong to no Service and are
// not listed.
func ChangedServices(oldT, newT []*nodetable.ServiceTable) []ServiceChange {
	before, after := portsByService(oldT), portsByService(newT)
	var out []ServiceChange
	for name, ports := range after {
		switch prev, ok := before[name]; {
		case !ok:
			out = append(out, ServiceChange{Service: name, Change: Added})
		case !reflect.DeepEqual(prev, ports):
			out = append(out, ServiceChange{Service: name, Change: Changed})
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, ServiceChange{Service: name, Change: Removed})
		}
	}
	slices.SortFunc(out, func(a, b ServiceChange) int {
		if a.Service < b.Service {
			return -1
		}
		if a.Service > b.Service {
			return 1
		}
		return 0
	})
	return out
}

// portsByService lists each Service's ports, family by family.
func portsByService(tables []*nodetable.ServiceTable) map[string][]nodetable.ServicePort {
	out := map[string][]nodetable.ServicePort{}
	for _, t := range tables {
		for _, p := range t.Ports {
			name := serviceName(p.Name)
			out[name] = append(out[name], p)
		}
	}
	return out
}

func serviceName(n nodetable.ServicePortName) string { return n.Namespace + "/" + n.Name }

// Only returns a copy of t that holds the ports of one Service
// ("namespace/name") and no other: rendered on both sides and diffed, it
// gives the rules that Service's own change adds and removes.
func Only(t *nodetable.ServiceTable, service string) *nodetable.ServiceTable {
	c := *t
	c.Ports = nil
	for _, p := range t.Ports {
		if serviceName(p.Name) == service {
			c.Ports = append(c.Ports, p)
		}
	}
	if c.Ports == nil {
		c.Ports = []nodetable.ServicePort{}
	}
	return &c
}
