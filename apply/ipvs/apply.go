package ipvs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Phase is a stage of Apply.
type Phase string

const (
	PhaseAdd      Phase = "add"      // devices, sets, entries, virtual and real servers, addresses
	PhaseIPTables Phase = "iptables" // the helper chains
	PhaseRemove   Phase = "remove"   // drains and everything stale
)

// ApplyError reports a failed apply. A failure while adding undoes what
// was added (Undone, UndoErr), as does a failure of the helper chains
// (whose own restore is atomic per table and rolled back by
// apply/iptables). A failure while removing leaves the new state in place
// with some stale objects still there, which is harmless and which the
// next apply removes.
type ApplyError struct {
	Phase  Phase
	Family nodetable.Family
	// Step is the command equivalent of the call that failed.
	Step    string
	Err     error
	Undone  int
	UndoErr error
}

func (e *ApplyError) Error() string {
	var msg string
	switch e.Phase {
	case PhaseRemove:
		return fmt.Sprintf("apply ipvs: removing stale state: %v; the new state is in place, what was not removed stays until the next apply", e.Err)
	case PhaseIPTables:
		msg = fmt.Sprintf("apply ipvs: helper chains: %v", e.Err)
	default:
		msg = fmt.Sprintf("apply ipvs (%s): %s: %v", e.Family, e.Step, e.Err)
	}
	switch {
	case e.UndoErr != nil:
		return msg + fmt.Sprintf("; undoing the %d ipvs changes made before also failed: %v", e.Undone, e.UndoErr)
	case e.Undone > 0:
		return msg + fmt.Sprintf("; the %d ipvs changes made before were undone", e.Undone)
	}
	return msg + "; nothing was changed"
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Apply runs the plans in three phases, each over every family: the
// additions and in-place changes, then the helper chains (which may now
// match the new sets), then the removals. So traffic always finds either
// the old or the new path: a new virtual server is complete before its
// address is bound, and nothing is removed while a rule still needs it.
func (c *Client) Apply(ctx context.Context, plans []*Plan) error {
	var conflicts []string
	for _, p := range plans {
		conflicts = append(conflicts, p.Changes.Conflicts...)
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("apply ipvs: %s", strings.Join(conflicts, "; "))
	}
	var done []op
	for _, p := range plans {
		for _, o := range addOps(p) {
			err := ctx.Err()
			if err == nil {
				err = o.do(c.Kernel)
			}
			if err != nil {
				return c.undo(&ApplyError{Phase: PhaseAdd, Family: o.family, Step: o.cmd, Err: err}, done)
			}
			done = append(done, o)
		}
	}
	var ipts []*applyipt.Plan
	for _, p := range plans {
		if !p.Changes.IPTables.Empty() {
			ipts = append(ipts, p.iptables)
		}
	}
	if len(ipts) > 0 {
		if err := c.IPTables.Apply(ctx, ipts); err != nil {
			return c.undo(&ApplyError{Phase: PhaseIPTables, Step: "iptables-restore", Err: err}, done)
		}
	}
	var errs []error
	for _, p := range plans {
		for _, o := range removeOps(p) {
			if err := ctx.Err(); err != nil {
				return &ApplyError{Phase: PhaseRemove, Family: o.family, Step: o.cmd, Err: err}
			}
			if err := o.do(c.Kernel); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %w", o.cmd, o.family, err))
			}
		}
	}
	if len(errs) > 0 {
		return &ApplyError{Phase: PhaseRemove, Err: errors.Join(errs...)}
	}
	return nil
}

// undo reverts the additions already made, newest first, and completes e.
func (c *Client) undo(e *ApplyError, done []op) error {
	e.Undone = len(done)
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		if err := done[i].undo(c.Kernel); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", done[i].cmd, err))
		}
	}
	e.UndoErr = errors.Join(errs...)
	return e
}
