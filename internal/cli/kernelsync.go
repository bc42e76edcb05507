package cli

import (
	"context"
	"errors"
	"fmt"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/lock"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// lock takes the run lock that keeps two writers from interleaving.
func (k *kernelFlags) lock() (*lock.Lock, error) {
	return lock.Acquire(k.lockFile, k.lockWait)
}

// syncKernel plans desired iptables rules against the kernel and applies
// them under the run lock, as the selected mode owns them (the userspace
// mode's portal rules go through here too). With dryRun it takes no lock
// and prints the restore input instead, returning nil plans. beforeApply
// runs just before writing.
func (c *common) syncKernel(ctx context.Context, k *kernelFlags, mode Mode, desired []*ipt.Ruleset, dryRun bool, beforeApply func(kernelPlan) error) (*applyipt.Client, []*applyipt.Plan, error) {
	b, err := c.backend(ctx, k, mode)
	if err != nil {
		return nil, nil, err
	}
	ib, ok := b.(*iptablesBackend)
	if !ok {
		return nil, nil, fmt.Errorf("--mode %s does not write iptables rules this way", mode)
	}
	p, err := c.sync(ctx, k, b, func() (kernelPlan, error) { return ib.planRulesets(ctx, desired) }, dryRun, beforeApply)
	if err != nil || dryRun {
		return ib.client, nil, err
	}
	return ib.client, p.(*iptablesPlan).plans, nil
}

// sync makes a plan and applies it under the run lock. With dryRun it takes
// no lock, prints what apply would send to the kernel, and returns the plan
// unapplied. beforeApply runs just before writing, with the plan; an
// error from it stops the sync with nothing written.
//
// ctx is checked once, after planning (see withInterrupt): a signal before
// that writes nothing; after it, the apply runs to its end, on a context
// that nothing cancels.
func (c *common) sync(ctx context.Context, k *kernelFlags, b kernelBackend, plan func() (kernelPlan, error), dryRun bool, beforeApply func(kernelPlan) error) (kernelPlan, error) {
	if !dryRun {
		l, err := k.lock()
		if err != nil {
			return nil, err
		}
		defer l.Release()
	}
	st := c.reporter().Start(fmt.Sprintf("reading the kernel (%s) and diffing", b.name()))
	defer st.End()
	p, err := plan()
	if err == nil {
		st.Done("read the kernel (%s) and diffed: %s", b.name(), p.summary())
		err = ctx.Err()
	}
	if err != nil {
		return nil, notWritten(ctx, err)
	}
	if dryRun {
		out, flush := c.colored("text", scriptClass)
		dryRunSysctls(out, p.sysctls())
		return p, errors.Join(b.dryRun(out, p), flush())
	}
	if beforeApply != nil {
		if err := beforeApply(p); err != nil {
			return nil, err
		}
	}
	if p.empty() {
		return p, nil
	}
	st.End()
	st = c.reporter().Start(fmt.Sprintf("applying (%s): %s", b.name(), p.summary()))
	defer st.End()
	// The sysctls the plan shows, and only those, before the rules that
	// need them (route_localnet before the localhost NodePort rules).
	if err := writeSysctls(procSys, p.sysctls()); err != nil {
		return p, err
	}
	if !p.rulesEmpty() {
		if err := b.apply(context.WithoutCancel(ctx), p); err != nil {
			return p, err
		}
	}
	st.Done("applied (%s): %s", b.name(), p.summary())
	return p, nil
}
