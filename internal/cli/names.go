package cli

import (
	"io"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// renderedServices are the Services ("namespace/name") whose ports the
// node's tables hold, sorted, each once.
func renderedServices(d *desired) []string {
	var names []string
	for _, f := range d.families {
		t := d.tables.ForFamily(f)
		if t == nil {
			continue
		}
		for _, p := range t.Ports {
			names = append(names, p.Name.Namespace+"/"+p.Name.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// changedServices are the Services ("namespace/name") whose ports differ
// between live (nil: a node that joins) and want, sorted.
func changedServices(want, live *desired) []string {
	var names []string
	for _, c := range review.ChangedServices(familyTables(liveTables(live), want.families), familyTables(want.tables, want.families)) {
		names = append(names, c.Service)
	}
	return names
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
