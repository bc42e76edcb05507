package savedplan

import (
	"errors"
	"fmt"
	"strings"
)

// ErrStale marks a saved plan that no longer describes the node: apply
// refuses it and changes nothing.
var ErrStale = errors.New("the saved plan no longer matches this node")

// CheckHost refuses a plan made on another machine, before a reboot, or
// in another network namespace.
func (p *Plan) CheckHost(now Host) error {
	switch {
	case p.Host.Hostname != now.Hostname:
		return fmt.Errorf("%w: it was made on host %q, this is %q", ErrStale, p.Host.Hostname, now.Hostname)
	case p.Host.BootID != now.BootID:
		return fmt.Errorf("%w: the machine has rebooted since it was made", ErrStale)
	case p.Host.NetnsCookie != now.NetnsCookie:
		return fmt.Errorf("%w: it was made in another network namespace", ErrStale)
	}
	return nil
}

// CheckBackend refuses a plan read from another backend (iptables-legacy
// against iptables-nft).
func (p *Plan) CheckBackend(now string) error {
	if now != p.Backend {
		return fmt.Errorf("%w: it was computed against %s, this run reads %s", ErrStale, p.Backend, now)
	}
	return nil
}

// CheckLive compares the owned kernel state now with the state the plan
// was computed against, table by table, and names every table that
// changed, appeared or went.
func (p *Plan) CheckLive(now []Table) error {
	was := map[string]string{}
	for _, t := range p.Live {
		was[t.Name] = t.SHA256
	}
	var changed []string
	seen := map[string]bool{}
	for _, t := range now {
		seen[t.Name] = true
		switch sum, ok := was[t.Name]; {
		case !ok:
			changed = append(changed, t.Name+" (not in the plan)")
		case sum != t.SHA256:
			changed = append(changed, t.Name)
		}
	}
	for _, t := range p.Live {
		if !seen[t.Name] {
			changed = append(changed, t.Name+" (no longer read)")
		}
	}
	if len(changed) > 0 {
		return fmt.Errorf("%w: the rules it owns changed since the plan was made, in %s; run plan again",
			ErrStale, strings.Join(changed, ", "))
	}
	return nil
}

// CheckChanges compares the change set computed now with the one that was
// reviewed.
func (p *Plan) CheckChanges(digest string) error {
	if digest != p.Changes.SHA256 {
		return fmt.Errorf("%w: planned again now, it gives other changes than the ones saved "+
			"(the node's addresses or sysctls, or the tool, changed?); run plan again", ErrStale)
	}
	return nil
}
