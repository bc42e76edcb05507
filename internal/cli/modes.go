package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// Mode is a proxy mode.
type Mode string

const (
	ModeIPTables  Mode = "iptables"
	ModeNFTables  Mode = "nftables"
	ModeIPVS      Mode = "ipvs"
	ModeUserspace Mode = "userspace"
)

var allModes = []Mode{ModeIPTables, ModeNFTables, ModeIPVS, ModeUserspace}

// kernelModes are the modes plan, apply and reset support.
var kernelModes = []Mode{ModeIPTables, ModeNFTables, ModeIPVS, ModeUserspace}

// modeOnlyFlags are the flags that mean something in one mode only.
var modeOnlyFlags = []struct {
	name string
	mode Mode
}{
	{"ipvs-scheduler", ModeIPVS},
	{"ipvs-exclude-cidrs", ModeIPVS},
	{"ipvs-strict-arp", ModeIPVS},
	{"wait", ModeIPVS},
	{"wait-timeout", ModeIPVS},
	{"proxy-port-range", ModeUserspace},
	{"bind-address", ModeUserspace},
}

// checkModeFlags refuses a flag of another mode than mode that the
// command line set: it would be silently ignored. Flags the config file set
// (fromConfig) are left alone, as kube-proxy leaves its config's other
// mode sections alone.
func checkModeFlags(fs *pflag.FlagSet, mode Mode, fromConfig map[string]string) error {
	for _, mf := range modeOnlyFlags {
		if _, fromFile := fromConfig[mf.name]; mf.mode == mode || fromFile {
			continue
		}
		if f := fs.Lookup(mf.name); f != nil && f.Changed {
			return fmt.Errorf("--%s applies to --mode=%s only, not --mode=%s", mf.name, mf.mode, mode)
		}
	}
	return checkAliasModes(fs, mode)
}

// parseMode returns the mode named by --mode; source names where the
// name came from, for the error (see ProxyFlags.describe).
func parseMode(source, name string) (Mode, error) {
	for _, m := range allModes {
		if string(m) == name {
			return m, nil
		}
	}
	err := fmt.Errorf("%s %q: must be iptables, nftables, ipvs or userspace", source, name)
	if m, ok := suggestMode(name); ok {
		err = fmt.Errorf("%w; did you mean %q?", err, m)
	}
	return "", err
}

// suggestMode is the one mode that name abbreviates ("nft", "ipt") or
// misspells by at most two edits ("nftabels", "IPVS").
func suggestMode(name string) (Mode, bool) {
	name = strings.ToLower(name)
	var prefixed, near []Mode
	for _, m := range allModes {
		if len(name) >= 2 && strings.HasPrefix(string(m), name) {
			prefixed = append(prefixed, m)
		}
		if editDistance(name, string(m)) <= 2 {
			near = append(near, m)
		}
	}
	found := near
	if len(prefixed) > 0 {
		// An abbreviation of two modes ("ip") is not a misspelling of one.
		found = prefixed
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parseFamilies returns the families selected by --family.
func parseFamilies(family string) ([]nodetable.Family, error) {
	switch strings.ToLower(family) {
	case "all", "":
		return []nodetable.Family{nodetable.IPv4, nodetable.IPv6}, nil
	case "ipv4":
		return []nodetable.Family{nodetable.IPv4}, nil
	case "ipv6":
		return []nodetable.Family{nodetable.IPv6}, nil
	}
	return nil, fmt.Errorf("--family %q: must be all, ipv4 or ipv6", family)
}
