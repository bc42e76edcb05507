package cli

import (
	"io"
	"reflect"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// renderedServices are the Services ("namespace/name") whose ports the
// node's tables hold, sorted, each once.
func renderedServices(d *desired) []string {
	return serviceNames(familyTables(d.tables, d.families))
}

// changedServiceNames are the Services ("namespace/name") whose own
// rules differ between live (nil: a node that joins) and want, sorted:
// each rendered alone on both sides and diffed, so that the list agrees
// with the plan's exit code (an endpoint that moves between other nodes
// changes a Service's ports but none of its rules here). The candidates
// are the Services whose ports differ, or every Service when the node's
// part of the tables differs (its addresses, pod ranges, zone, the
// Service CIDRs), which reaches every Service's rules.
func (o *PlanOptions) changedServiceNames(want, live *desired, p kernelPlan) []string {
	if p.empty() {
		return nil
	}
	lt := liveTables(live)
	oldT, newT := familyTables(lt, want.families), familyTables(want.tables, want.families)
	var candidates []string
	if nodePartDiffers(oldT, newT) {
		candidates = serviceNames(slices.Concat(oldT, newT))
	} else {
		for _, c := range review.ChangedServices(oldT, newT) {
			candidates = append(candidates, c.Service)
		}
	}
	var names []string
	for _, svc := range candidates {
		if d, err := o.serviceDiff(want.tables, lt, svc); err != nil || !d.empty() {
			names = append(names, svc) // a diff that fails is no proof of no change
		}
	}
	return names
}

// nodePartDiffers says whether the tables differ in anything but their
// ports.
func nodePartDiffers(oldT, newT []*nodetable.ServiceTable) bool {
	for i := range oldT {
		a, b := *oldT[i], *newT[i]
		a.Ports, b.Ports = nil, nil
		if !reflect.DeepEqual(a, b) {
			return true
		}
	}
	return false
}

// serviceNames are the Services ("namespace/name") with ports in tables,
// sorted, each once.
func serviceNames(tables []*nodetable.ServiceTable) []string {
	var names []string
	for _, t := range tables {
		for _, p := range t.Ports {
			names = append(names, p.Name.Namespace+"/"+p.Name.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// liveTables are live's tables, or empty ones for a node that joins.
func liveTables(live *desired) *nodetable.Tables {
	if live == nil {
		return &nodetable.Tables{IPv4: &nodetable.ServiceTable{Family: nodetable.IPv4}, IPv6: &nodetable.ServiceTable{Family: nodetable.IPv6}}
	}
	return live.tables
}

// planNames is plan --against -o name: the Services the plan changes,
// with plan's exit code (ErrChanges when the rules change).
func planNames(w io.Writer, services []string, p kernelPlan) error {
	if err := printServiceNames(w, services); err != nil {
		return err
	}
	if !p.empty() {
		return ErrChanges
	}
	return nil
}
