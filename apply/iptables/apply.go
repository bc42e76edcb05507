package iptables

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Plan is one family's desired rules, the live rules read from the kernel,
// and the changes between them.
type Plan struct {
	Desired *ipt.Ruleset
	Live    *ipt.Ruleset
	Changes *diff.IPTablesChangeSet
	// generation is the nf_tables generation Live is exact at, or noGeneration.
	generation int64
}

// Plan reads the kernel for each desired family and computes the changes.
func (c *Client) Plan(ctx context.Context, desired []*ipt.Ruleset) ([]*Plan, error) {
	if c.Ownership == nil {
		return nil, errNoOwnership
	}
	var plans []*Plan
	for _, d := range desired {
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("refusing to write the rendered rules: %w", err)
		}
		live, gen, err := c.readAt(ctx, d.Family)
		if err != nil {
			return nil, err
		}
		plans = append(plans, &Plan{Desired: d, Live: live, Changes: diff.IPTables(d, live, c.Ownership), generation: gen})
	}
	return plans, nil
}

// Step is one iptables-restore run: one table of one family.
type Step struct {
	Family nodetable.Family
	Table  ipt.TableName
	Script []byte
}

// Steps returns the restore runs that apply the plans, in order.
func (c *Client) Steps(plans []*Plan) []Step {
	var steps []Step
	for _, p := range plans {
		for _, t := range Tables {
			if s := Script(p.Changes.Changes, t, c.Backend, chainCount(p.Live, t)); s != nil {
				steps = append(steps, Step{Family: p.Desired.Family, Table: t, Script: s})
			}
		}
	}
	return steps
}

// ApplyError reports a failed apply and whether the tables written before
// the failure were restored.
type ApplyError struct {
	Step       Step
	Err        error
	RollbackOK bool
	Rollback   error
}

func (e *ApplyError) Error() string {
	msg := fmt.Sprintf("apply %s %s table: %v", e.Step.Family, e.Step.Table, e.Err)
	if e.Rollback != nil {
		return msg + fmt.Sprintf("; undoing the tables already written also failed: %v", e.Rollback)
	}
	if e.RollbackOK {
		return msg + "; the tables already written were restored, nothing changed"
	}
	return msg + "; nothing was changed"
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply runs the steps of the plans. Each step is atomic in the kernel. If
// a step fails, the steps already run are undone from the live state read
// before, so the kernel ends either fully applied or as it was.
func (c *Client) Apply(ctx context.Context, plans []*Plan) error {
	if c.Ownership == nil {
		return errNoOwnership // the undo needs it
	}
	for _, p := range plans {
		if err := checkWritable(p.Changes.Changes); err != nil {
			return err
		}
	}
	steps := c.Steps(plans)
	if len(steps) == 0 {
		return nil
	}
	for i, s := range steps {
		if err := c.Restore(ctx, s.Family, s.Script); err != nil {
			c.forgetAll(plans)
			ae := &ApplyError{Step: s, Err: err}
			if i > 0 {
				ae.Rollback = c.undo(context.WithoutCancel(ctx), plans, steps[:i])
				ae.RollbackOK = ae.Rollback == nil
			}
			return ae
		}
	}
	c.remember(plans, len(steps))
	return nil
}

// remember caches what the kernel now holds, computed from the plans, when
// every plan was read at the same generation and the generation has since
// moved by exactly the restores just run: every commit since the reads was
// ours. Otherwise the next read dumps afresh.
func (c *Client) remember(plans []*Plan, commits int) {
	if !c.cacheUsable() {
		return
	}
	before := plans[0].generation
	for _, p := range plans {
		if p.generation == noGeneration || p.generation != before {
			c.forgetAll(plans)
			return
		}
	}
	after, err := c.Generation()
	if err != nil || int64(after)-before != int64(commits) {
		c.forgetAll(plans)
		return
	}
	for _, p := range plans {
		if err := c.store(diff.ReplayIPTables(p.Live, p.Changes), after); err != nil {
			c.forgetAll(plans)
			return
		}
	}
}

func (c *Client) forgetAll(plans []*Plan) {
	if !c.cacheUsable() {
		return
	}
	for _, p := range plans {
		c.forget(p.Live.Family)
	}
}

// undo restores the owned part of each table written by done to what Plan
// read before the apply.
func (c *Client) undo(ctx context.Context, plans []*Plan, done []Step) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		var before *ipt.Ruleset
		for _, p := range plans {
			if p.Live.Family == s.Family {
				before = p.Live
			}
		}
		now, err := c.Read(ctx, s.Family)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		back := diff.IPTables(diff.OwnedIPTables(before, c.Ownership), now, c.Ownership)
		if err := checkWritable(back.Changes); err != nil {
			errs = append(errs, err)
			continue
		}
		if script := Script(back.Changes, s.Table, c.Backend, chainCount(now, s.Table)); script != nil {
			if err := c.Restore(ctx, s.Family, script); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// checkWritable refuses changes holding a rule that would not stay on its
// own restore line. Desired rules are validated by Plan already; this also
// covers live rules written back (a jump deleted by its spec, an undo of a
// hand-edited owned chain), which a hand edit may have given a newline.
func checkWritable(changes []diff.IPTablesChange) error {
	for _, c := range changes {
		for _, r := range c.Rules {
			if err := ipt.ValidateRule(r); err != nil {
				return fmt.Errorf("refusing to write chain %s: %w", c.Chain, err)
			}
		}
	}
	return nil
}

func chainCount(rs *ipt.Ruleset, t ipt.TableName) int {
	if tb := rs.Table(t); tb != nil {
		return len(tb.Chains)
	}
	return 0
}
