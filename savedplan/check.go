package savedplan

import (
	"errors"
	"fmt"
	"strconv"
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

// CheckChanges compares the change set planned now, as plan prints it,
// with the plan text in the file: what the reviewer read is what apply may
// write. Their hunk headers, added, removed and context lines must be the
// same, in the same order; only comments may differ (see ChangeLines). The stored changes.sha256 plays no part: Decode has
// checked that it is the digest of the text.
//
// nowVersion is the version of the tool checking: when the texts differ
// and the plan was made by another version, the error says so, since a
// version may print the same changes otherwise (how a changed chain's
// rules are lined up, for one).
func (p *Plan) CheckChanges(nowText, nowVersion string) error {
	err := CompareChanges(p.Changes.Diff, nowText)
	if err != nil && p.ToolVersion != nowVersion {
		return fmt.Errorf("%w (the plan was made by kubectl-svcproxy %s, this is %s: plan again with this version)", err, p.ToolVersion, nowVersion)
	}
	return err
}

// ErrEdited marks a saved plan whose parts disagree with each other: the
// file was changed after plan wrote it.
var ErrEdited = errors.New("the saved plan was edited")

// CompareChanges compares the change lines of the reviewed plan text with
// those of the text planned now, and names the first line where they part:
// the line of each side, or that a side has no more.
func CompareChanges(reviewed, now string) error {
	was, is := ChangeLines(reviewed), ChangeLines(now)
	for i := range max(len(was), len(is)) {
		a, b := lineAt(was, i), lineAt(is, i)
		if a == b {
			continue
		}
		return fmt.Errorf("%w: planned again now, its changes differ from the plan text that was reviewed, "+
			"at change line %d: the plan file shows %s, planned now: %s; run plan again", ErrStale, i+1, a, b)
	}
	return nil
}

// lineAt quotes lines[i], or says that there is none.
func lineAt(lines []string, i int) string {
	if i >= len(lines) {
		return "no more changes"
	}
	return strconv.Quote(lines[i])
}

// CheckConsistent refuses a plan whose parts disagree, as a file edited
// after plan wrote it: a top-level node or mode that is not what its
// settings (which are what apply uses) say, or a changes.sha256 that is
// not the digest of its changes.diff. A reader of the file must be able to
// trust either part.
func (p *Plan) CheckConsistent() error {
	for field, want := range map[string]string{"mode": p.Mode, "node-name": p.Node} {
		if got, ok := p.Settings[field]; !ok || got != want {
			return fmt.Errorf("%w: its settings say %s=%q, but the plan is for %q", ErrEdited, field, got, want)
		}
	}
	if sum := ChangeDigest(p.Changes.Diff); sum != p.Changes.SHA256 {
		return fmt.Errorf("%w: its changes.sha256 is not the digest of its changes.diff (%s); run plan again", ErrEdited, sum)
	}
	return nil
}
