//go:build linux

package cli

import (
	"context"
	"fmt"
)

// liveDesired reads the mode's ruleset from this node's kernel, as plan
// does, and returns d with it in place of the rendered one: hand edits and
// drift are then traced as they are. The node's tables (its addresses,
// the Services) stay those of the render.
func (o *TraceOptions) liveDesired(ctx context.Context, d *desired) (*desired, error) {
	b, err := o.backend(ctx, &o.kern, d.mode)
	if err != nil {
		return nil, err
	}
	o.liveBackend = b.name()
	kp, err := b.plan(ctx, d)
	if err != nil {
		return nil, err
	}
	live := *d
	switch p := kp.(type) {
	case *iptablesPlan:
		live.iptables, live.userspace = nil, nil
		for i, pl := range p.plans {
			if d.mode == ModeUserspace {
				// The proxy ports are the proxy's state, not the kernel's:
				// the portal rules are read, the port map is rendered.
				us := *d.userspace[i]
				us.IPTables = pl.Live
				live.userspace = append(live.userspace, &us)
				continue
			}
			live.iptables = append(live.iptables, pl.Live)
		}
	case *nftPlan:
		live.nftables = nil
		for _, pl := range p.plans {
			if pl.Live == nil {
				return nil, fmt.Errorf("--live: the kernel has no %s kube-proxy table (run apply first, or trace the rendered rules without --live)", pl.Family)
			}
			live.nftables = append(live.nftables, pl.Live)
		}
	case *ipvsPlan:
		live.ipvs = nil
		for _, pl := range p.plans {
			live.ipvs = append(live.ipvs, pl.Live)
		}
	default:
		return nil, fmt.Errorf("--live: mode %s cannot be read", d.mode)
	}
	return &live, nil
}
