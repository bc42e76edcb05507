package ipvs

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// draining is one real server left at weight 0 by graceful termination.
type draining struct {
	vs ipvs.VirtualServer
	ap netip.AddrPort
}

// pendingDrains returns the real servers the plans drain or found draining.
func pendingDrains(plans []*Plan) []draining {
	var out []draining
	for _, p := range plans {
		for _, sc := range p.Changes.Services {
			for _, d := range sc.Dests {
				if d.Verb == diff.IPVSDrainDest {
					out = append(out, draining{sc.Service, netip.AddrPortFrom(d.Dest.Address, d.Dest.Port)})
				}
			}
		}
		for _, d := range p.Changes.Draining {
			out = append(out, draining{d.Service, netip.AddrPortFrom(d.Dest.Address, d.Dest.Port)})
		}
	}
	return out
}

// WaitDrained finishes graceful termination for `apply --wait`: it watches
// the real servers that the applied plans drained (or found draining) and
// deletes each once IPVS tracks no connection to it, as kube-proxy's
// graceful termination manager does every minute. A real server that
// got its weight back meanwhile (it is desired again) is left alone. It
// returns how many it deleted, and an error naming those still draining
// when the timeout passes.
//
// IPVS counts a closed TCP connection as inactive until its state times
// out: 2 minutes in TIME_WAIT after a normal close, 10 s after a reset.
func (c *Client) WaitDrained(ctx context.Context, plans []*Plan, timeout time.Duration) (int, error) {
	pending := pendingDrains(plans)
	deleted := 0
	interval := c.PollInterval
	if interval <= 0 {
		interval = time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		var still []draining
		for _, d := range pending {
			done, err := c.finishDrain(d)
			if err != nil {
				return deleted, err
			}
			if done == drainDeleted {
				deleted++
			}
			if done == drainWaiting {
				still = append(still, d)
			}
		}
		pending = still
		if len(pending) == 0 {
			return deleted, nil
		}
		wait := min(interval, time.Until(deadline))
		if wait <= 0 {
			return deleted, fmt.Errorf("%d real servers still draining after %s: %s", len(pending), timeout, describeDrains(pending))
		}
		select {
		case <-ctx.Done():
			return deleted, ctx.Err()
		case <-time.After(wait):
		}
	}
}

type drainState int

const (
	drainWaiting drainState = iota
	drainDeleted
	drainGone // deleted by someone else, or its weight is back
)

// finishDrain deletes one draining real server if it has no connections.
func (c *Client) finishDrain(d draining) (drainState, error) {
	rs, conns, err := c.Kernel.Dests(&d.vs)
	if err != nil {
		return drainWaiting, err
	}
	for i, r := range rs {
		if netip.AddrPortFrom(r.Address, r.Port) != d.ap {
			continue
		}
		switch {
		case r.Weight != 0:
			return drainGone, nil
		case conns[i].Total() > 0:
			return drainWaiting, nil
		}
		if err := c.Kernel.DeleteDest(&d.vs, r); err != nil {
			return drainWaiting, fmt.Errorf("delete drained real server %s of %s: %w", d.ap, d.vs.Service(), err)
		}
		return drainDeleted, nil
	}
	return drainGone, nil
}

func describeDrains(ds []draining) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.vs.Service()+" -r "+d.ap.String())
	}
	return strings.Join(parts, ", ")
}
