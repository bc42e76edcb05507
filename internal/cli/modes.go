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
	return "", fmt.Errorf("%s %q: must be iptables, nftables, ipvs or userspace", source, name)
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
