package cli

import (
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
)

// The tool's record of its own applies: a file per mode in the network
// namespace's state directory (--state-dir/netns-<cookie>/applied-<mode>)
// holding the time of the last apply of that mode there, removed by
// `reset` of the mode. The rules cannot say whose they are (the tool's
// are kube-proxy's), so when another mode's rules are found the record
// says whether this tool wrote them. The state directory is a tmpfs by
// default, as the rules are gone after a reboot too. Without a state
// directory, or a netns cookie, nothing is recorded.

func appliedFile(mode Mode) string { return "applied-" + string(mode) }

// recordApplied notes that mode was applied now. A failure is the
// cache's warning: the record only makes a message more precise.
func (k *kernelFlags) recordApplied(mode Mode) {
	if k.stateDir == "" {
		return
	}
	cookie, err := nftgen.NetnsCookie()
	if err != nil {
		return
	}
	dir, err := k.cacheDir(cookie)
	if err != nil || dir == nil {
		return
	}
	if err := dir.WriteFile(appliedFile(mode), []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil && k.cacheWarn != nil {
		k.cacheWarn(err)
	}
}

// forgetApplied removes the record of mode (reset).
func (k *kernelFlags) forgetApplied(mode Mode) {
	if k.stateDir == "" {
		return
	}
	cookie, err := nftgen.NetnsCookie()
	if err != nil {
		return
	}
	if dir, err := k.cacheDir(cookie); err == nil && dir != nil {
		dir.Remove(appliedFile(mode))
	}
}

// lastApplied says when this tool last applied mode in this namespace,
// with this --state-dir; ok is false without a record.
func (k *kernelFlags) lastApplied(mode Mode) (at time.Time, ok bool) {
	if k.stateDir == "" {
		return time.Time{}, false
	}
	cookie, err := nftgen.NetnsCookie()
	if err != nil {
		return time.Time{}, false
	}
	dir, err := k.cacheDir(cookie)
	if err != nil || dir == nil {
		return time.Time{}, false
	}
	data, err := dir.ReadFile(appliedFile(mode))
	if err != nil {
		return time.Time{}, false
	}
	at, err = time.Parse(time.RFC3339, strings.TrimSpace(string(data)))
	return at, err == nil
}

// whose says who wrote a mode's rules found on the node, as far as the
// record knows.
func (k *kernelFlags) whose(mode Mode) string {
	if at, ok := k.lastApplied(mode); ok {
		return "written by this tool's apply --mode=" + string(mode) + " at " + at.Format(time.RFC3339)
	}
	return "not applied by this tool with this --state-dir: kube-proxy's, or an earlier apply's"
}
