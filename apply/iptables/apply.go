package iptables

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// Step is one iptables-restore run: every table of one family that
// changes, in the order of Tables.
type Step struct {
	Family nodetable.Family
	Tables []ipt.TableName
	Script []byte
}

// Steps returns the restore runs that apply the plans, one per family.
func (c *Client) Steps(plans []*Plan) []Step {
	var steps []Step
	for _, p := range plans {
		if s, ok := c.step(p.Desired.Family, p.Changes.Changes, p.Live); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

// step puts the changes of every table of one family into one restore
// input. iptables-restore still commits each table at its COMMIT line (on
// the nf_tables backend too), but once it runs it has all of its input
// (see OSExec), so it writes every table even if this process dies.
func (c *Client) step(family nodetable.Family, changes []diff.IPTablesChange, live *ipt.Ruleset) (Step, bool) {
	s := Step{Family: family}
	for _, t := range Tables {
		before := len(s.Script)
		s.Script = appendScript(s.Script, changes, t, c.Backend, chainCount(live, t))
		if len(s.Script) > before {
			s.Tables = append(s.Tables, t)
		}
	}
	return s, len(s.Tables) > 0
}

// ApplyError reports a failed apply and whether the tables written before
// the failure were restored.
type ApplyError struct {
	Step Step
	Err  error
	// RollbackOK is set when tables had been written (by earlier steps, or
	// by the failed restore before its failing table) and were restored.
	RollbackOK bool
	Rollback   error
}

func (e *ApplyError) Error() string {
	var tables []string
	for _, t := range e.Step.Tables {
		tables = append(tables, string(t))
	}
	msg := fmt.Sprintf("apply %s %s tables: %v", e.Step.Family, strings.Join(tables, " and "), e.Err)
	if e.Rollback != nil {
		return msg + fmt.Sprintf("; undoing the tables already written also failed: %v", e.Rollback)
	}
	if e.RollbackOK {
		return msg + "; the tables already written were restored, nothing changed"
	}
	return msg + "; nothing was changed"
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply runs the steps of the plans, one restore per family. If a restore
// fails, whatever the failed and the earlier restores committed is undone
// from the live state read before, so the kernel ends either fully applied
// or as it was. A restore is never cancelled half way (see Restore).
func (c *Client) Apply(ctx context.Context, plans []*Plan) error {
	if c.Ownership == nil {
		return errNoOwnership // the undo needs it
	}
	for _, p := range plans {
		if err := checkWritable(p.Changes.Changes); err != nil {
			return err
		}
	}
	if err := c.ensureCounters(plans); err != nil {
		return err
	}
	steps := c.Steps(plans)
	commits := 0
	for i, s := range steps {
		if err := c.Restore(ctx, s.Family, s.Script); err != nil {
			c.forgetAll(plans)
			ae := &ApplyError{Step: s, Err: err}
			var undone int
			undone, ae.Rollback = c.undo(context.WithoutCancel(ctx), plans, steps[:i+1])
			ae.RollbackOK = undone > 0 && ae.Rollback == nil
			return ae
		}
		commits += len(s.Tables)
	}
	if commits > 0 {
		c.remember(plans, commits)
	}
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

// undo restores the owned part of each family written by done, the
// failed step included, to what Plan read before the apply, and returns
// how many restores that took: none when nothing had been committed.
func (c *Client) undo(ctx context.Context, plans []*Plan, done []Step) (int, error) {
	var errs []error
	n := 0
	for i := len(done) - 1; i >= 0; i-- {
		family := done[i].Family
		var before *ipt.Ruleset
		for _, p := range plans {
			if p.Live.Family == family {
				before = p.Live
			}
		}
		now, err := c.Read(ctx, family)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		back := diff.IPTables(diff.OwnedIPTables(before, c.Ownership), now, c.Ownership)
		for i := range back.Changes {
			// Rewritten whole, an edited chain gets its order back too.
			back.Changes[i].Edits = nil
		}
		if err := checkWritable(back.Changes); err != nil {
			errs = append(errs, err)
			continue
		}
		if s, ok := c.step(family, back.Changes, now); ok {
			n++
			if err := c.Restore(ctx, family, s.Script); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return n, errors.Join(errs...)
}

// checkWritable refuses changes holding a rule that would not stay on its
// own restore line. Desired rules are validated by Plan already; this also
// covers live rules written back (a jump or a dispatch rule deleted by its
// spec, an undo of a hand-edited owned chain), which a hand edit may have
// given a newline.
func checkWritable(changes []diff.IPTablesChange) error {
	for _, c := range changes {
		for _, r := range c.Rules {
			if err := ipt.ValidateRule(r); err != nil {
				return fmt.Errorf("refusing to write chain %s: %w", c.Chain, err)
			}
		}
		for _, e := range c.Edits {
			if err := ipt.ValidateRule(e.Rule); err != nil {
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
