package cli

import (
	"context"
	"fmt"
	"io"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// kernelBackend reads, plans and writes one mode's state in this node's
// kernel. plan, apply and reset are written once against it; each mode
// supplies its own.
type kernelBackend interface {
	// name says what is read and written, for messages: "iptables-nft".
	name() string
	// plan compares the rendered state with the kernel.
	plan(ctx context.Context, d *desired) (kernelPlan, error)
	// planReset plans the removal of everything the mode owns.
	planReset(ctx context.Context, families []nodetable.Family) (kernelPlan, error)
	// apply makes the planned changes, all or nothing per table.
	apply(ctx context.Context, p kernelPlan) error
	// dryRun prints exactly what apply would send to the kernel.
	dryRun(w io.Writer, p kernelPlan) error
}

// kernelPlan is the planned change for every selected family.
type kernelPlan interface {
	// empty says that the plan changes nothing; rulesEmpty, that it
	// changes no rules (but may set sysctls).
	empty() bool
	rulesEmpty() bool
	summary() diff.Summary
	// writeText prints the plan as a diff in the mode's native syntax.
	writeText(w io.Writer) error
	// data is the plan for -o json and -o yaml.
	data() any
	// changed reports whether the plan changes the family's state; stale
	// UDP conntrack entries are cleaned only then.
	changed(f nodetable.Family) bool
	// servicePorts says which Service ports are programmed and which of
	// them the plan removes, for apply's --max-removal guard.
	servicePorts() servicePorts
	// liveTables fingerprints the owned live state the plan was computed
	// against, per kernel table, for a saved plan.
	liveTables() []savedplan.Table
	// sysctls are the sysctls the plan changes, written before the rules;
	// setSysctls records them (planKernel).
	sysctls() diff.SysctlChanges
	setSysctls(diff.SysctlChanges)
}

// backend returns the kernel backend of the selected mode.
func (c *common) backend(ctx context.Context, k *kernelFlags, mode Mode) (kernelBackend, error) {
	if err := requireNetAdmin("reading and changing the node's " + string(mode) + " rules"); err != nil {
		return nil, err
	}
	k.cacheWarnSet.Do(func() { k.cacheWarn = c.warnCache })
	switch mode {
	case ModeIPTables, ModeUserspace:
		own := render.IPTablesOwnership()
		if mode == ModeUserspace {
			own = render.UserspaceOwnership()
		}
		client, err := k.iptablesClient(ctx, own)
		if err != nil {
			return nil, err
		}
		return &iptablesBackend{client: client, mode: mode}, nil
	}
	return c.otherBackend(ctx, k, mode)
}

// iptablesBackend writes iptables rules with iptables-restore: the
// iptables mode's whole ruleset, or the userspace mode's portal rules.
type iptablesBackend struct {
	client *applyipt.Client
	mode   Mode
}

func (b *iptablesBackend) name() string { return "iptables-" + string(b.client.Backend) }

func (b *iptablesBackend) plan(ctx context.Context, d *desired) (kernelPlan, error) {
	var rulesets []*ipt.Ruleset
	switch b.mode {
	case ModeUserspace:
		for _, rs := range d.userspace {
			rulesets = append(rulesets, rs.IPTables)
		}
	default:
		rulesets = d.iptables
	}
	return b.planRulesets(ctx, rulesets)
}

func (b *iptablesBackend) planRulesets(ctx context.Context, rulesets []*ipt.Ruleset) (kernelPlan, error) {
	plans, err := b.client.Plan(ctx, rulesets)
	if err != nil {
		return nil, err
	}
	return newIPTablesPlan(b.name(), b.mode, b.client.Ownership, plans), nil
}

func (b *iptablesBackend) planReset(ctx context.Context, families []nodetable.Family) (kernelPlan, error) {
	var empty []*ipt.Ruleset
	for _, f := range families {
		empty = append(empty, diff.EmptyIPTables(f))
	}
	return b.planRulesets(ctx, empty)
}

func (b *iptablesBackend) apply(ctx context.Context, p kernelPlan) error {
	return b.client.Apply(ctx, p.(*iptablesPlan).plans)
}

func (b *iptablesBackend) dryRun(w io.Writer, p kernelPlan) error {
	steps := b.client.Steps(p.(*iptablesPlan).plans)
	if len(steps) == 0 {
		fmt.Fprintf(w, "# nothing to change (%s)\n", b.name())
	}
	for _, s := range steps {
		fmt.Fprintf(w, "# %s-%s-restore --noflush (%s)\n", binFor(s.Family), b.client.Backend, s.Family)
		if _, err := w.Write(s.Script); err != nil { // not through fmt: it can be 100 MB
			return err
		}
	}
	return nil
}

// changeSet is what every mode's change set says about itself.
type changeSet interface {
	Empty() bool
	Summary() diff.Summary
	WriteText(w io.Writer, liveName string) error
}

// modePlan is a kernelPlan made of one plan per family (or table), of a
// mode's own plan type P.
type modePlan[P any] struct {
	liveName string
	plans    []P
	changes  func(P) changeSet
	family   func(P) nodetable.Family
	ports    func(P) servicePorts
	live     func(P) []savedplan.Table
	// sysctlChanges are shown first and written first.
	sysctlChanges diff.SysctlChanges
}

func (p *modePlan[P]) sysctls() diff.SysctlChanges     { return p.sysctlChanges }
func (p *modePlan[P]) setSysctls(s diff.SysctlChanges) { p.sysctlChanges = s }

func (p *modePlan[P]) servicePorts() servicePorts {
	var s servicePorts
	for _, pl := range p.plans {
		s.add(p.ports(pl))
	}
	return s
}

func (p *modePlan[P]) empty() bool {
	return p.sysctlChanges.Empty() && p.rulesEmpty()
}

func (p *modePlan[P]) rulesEmpty() bool {
	for _, pl := range p.plans {
		if !p.changes(pl).Empty() {
			return false
		}
	}
	return true
}

func (p *modePlan[P]) summary() diff.Summary {
	total := diff.Summary{Sysctls: len(p.sysctlChanges)}
	for _, pl := range p.plans {
		total.Add(p.changes(pl).Summary())
	}
	return total
}

func (p *modePlan[P]) writeText(w io.Writer) error {
	if err := p.sysctlChanges.WriteText(w); err != nil {
		return err
	}
	for _, pl := range p.plans {
		if err := p.changes(pl).WriteText(w, p.liveName); err != nil {
			return err
		}
	}
	return nil
}

func (p *modePlan[P]) data() any {
	sets := make([]changeSet, 0, len(p.plans))
	for _, pl := range p.plans {
		sets = append(sets, p.changes(pl))
	}
	return sets
}

func (p *modePlan[P]) changed(f nodetable.Family) bool {
	for _, pl := range p.plans {
		if p.family(pl) == f && !p.changes(pl).Empty() {
			return true
		}
	}
	return false
}

// iptablesPlan is one restore plan per family.
type iptablesPlan = modePlan[*applyipt.Plan]

func newIPTablesPlan(liveName string, mode Mode, own *ipt.Ownership, plans []*applyipt.Plan) *iptablesPlan {
	return &iptablesPlan{
		liveName: liveName, plans: plans,
		changes: func(p *applyipt.Plan) changeSet { return p.Changes },
		family:  func(p *applyipt.Plan) nodetable.Family { return p.Desired.Family },
		ports:   iptablesPorts(mode),
		live:    iptablesLive(own),
	}
}

func binFor(f nodetable.Family) string {
	if f == nodetable.IPv6 {
		return "ip6tables"
	}
	return "iptables"
}
