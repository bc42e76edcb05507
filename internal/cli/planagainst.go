package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// liveOnlyFlags are plan's flags about the kernel that --against reads
// nothing from: accepted, so that one command line serves both, and
// named on stderr as doing nothing.
var liveOnlyFlags = []string{"iptables-backend", "state-dir", "lock-file", "lock-wait", "ipvs-strict-arp"}

// validateAgainst checks --against and --all-nodes against the other
// flags.
func (o *PlanOptions) validateAgainst() error {
	switch {
	case o.against == "" && o.allNodes:
		return errors.New("--all-nodes needs --against OLD: a plan against this node's kernel is this node's alone")
	case o.against == "":
		return nil
	case o.out != "":
		return errors.New("--out saves a plan for apply FILE to execute against this node's kernel, and a plan --against a file has no kernel state behind it: drop --out, or --against")
	case o.against == "-" && o.input.file == "-":
		return errors.New("--against - and --filename - cannot both read stdin")
	case o.allNodes && o.flags.Changed("node-name"):
		return fmt.Errorf("--all-nodes plans every node of the snapshots: drop %s", givenFlag(o.flags, "node-name"))
	case o.allNodes && o.flags.Changed("node-ip"):
		return errors.New("--all-nodes plans every node with its own IPs, from its Node object: drop --node-ip")
	}
	return nil
}

// warnLiveOnly says, one line each, which of the given flags do nothing
// against a file.
func (o *PlanOptions) warnLiveOnly() {
	for _, name := range liveOnlyFlags {
		if f := o.flags.Lookup(name); f != nil && f.Changed {
			o.warnf("--%s has no effect with --against: nothing is read from the kernel", name)
		}
	}
}

// againstName names --against's file, as the diff's live side.
func (o *PlanOptions) againstName() string {
	if o.against == "-" {
		return "<stdin>"
	}
	return o.against
}

// runAgainst is plan --against: both sides rendered from snapshots.
func (o *PlanOptions) runAgainst(ctx context.Context) error {
	o.warnLiveOnly()
	s := &o.proxy.settings
	newSnap, err := o.load(ctx, &o.input, s.cluster.NodeName)
	if err != nil {
		return err
	}
	oldSnap, err := o.load(ctx, &inputFlags{conn: &connFlags{}, file: o.against}, "")
	if err != nil {
		return err
	}
	if o.allNodes {
		return o.runAllNodes(newSnap, oldSnap)
	}
	want, live, p, err := o.planNode(s, newSnap, oldSnap)
	if err != nil {
		return err
	}
	node := want.tables.IPv4.Node.Name
	if live == nil {
		o.warnf("node %s is not in %s: planned against an empty ruleset, as on a node that joins", node, o.againstName())
	}
	if o.output == outputName {
		return planNames(o.streams.Out, o.changedServiceNames(want, live, p), p)
	}
	var services []review.ServiceChange
	if o.output == "markdown" {
		services = o.serviceChanges(want, live)
	}
	out, flush := o.colored(o.output, diffClass)
	head := planHead{mode: want.mode, backend: "rendered", against: o.againstName(), node: node,
		noChanges: fmt.Sprintf("No changes: %s renders the same %s rules for node %s as %s.", o.inputName(), want.mode, node, o.againstName())}
	if err := o.writePlan(out, head, p, services); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if !p.empty() {
		return ErrChanges
	}
	return nil
}

// planNode renders the node of s from both snapshots and diffs them:
// live is nil when oldSnap does not have the node.
func (o *PlanOptions) planNode(s *renderSettings, newSnap, oldSnap *cluster.Snapshot) (want, live *desired, p kernelPlan, err error) {
	if want, err = o.renderSnapshot(s, newSnap); err != nil {
		return nil, nil, nil, err
	}
	if live, err = o.renderAgainst(s, oldSnap); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", o.againstName(), err)
	}
	excluded, err := o.kernel.excludeCIDRs("--ipvs-exclude-cidrs")
	if err != nil {
		return nil, nil, nil, err
	}
	p, err = diffDesired(want, live, o.againstName(), excluded, nil)
	return want, live, p, err
}

// serviceChanges lists the Services whose ports differ between live and
// want, each with the counts of its own rules' changes: its ports alone
// rendered on both sides and diffed.
func (o *PlanOptions) serviceChanges(want, live *desired) []review.ServiceChange {
	lt := liveTables(live)
	changes := review.ChangedServices(familyTables(lt, want.families), familyTables(want.tables, want.families))
	for i, c := range changes {
		if p, err := o.serviceDiff(want.tables, lt, c.Service); err == nil {
			changes[i].Summary = p.summary()
		}
	}
	return changes
}

// serviceDiff renders one Service's ports alone on both sides and diffs
// them: the rules that Service's own change adds and removes.
func (o *PlanOptions) serviceDiff(want, live *nodetable.Tables, service string) (kernelPlan, error) {
	excluded, _ := o.kernel.excludeCIDRs("--ipvs-exclude-cidrs") // checked by Validate
	s := o.proxy.settings
	only := func(t *nodetable.Tables) *nodetable.Tables {
		return &nodetable.Tables{IPv4: review.Only(t.IPv4, service), IPv6: review.Only(t.IPv6, service)}
	}
	return diffDesired(o.renderTables(&s, only(want)), o.renderTables(&s, only(live)), "", excluded, nil)
}

// familyTables are the tables of the selected families.
func familyTables(t *nodetable.Tables, families []nodetable.Family) []*nodetable.ServiceTable {
	var out []*nodetable.ServiceTable
	for _, f := range families {
		out = append(out, t.ForFamily(f))
	}
	return out
}
