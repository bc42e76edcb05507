package cli

import (
	"fmt"
	"strings"

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

// parseMode returns the mode named by --mode.
func parseMode(name string) (Mode, error) {
	for _, m := range allModes {
		if string(m) == name {
			return m, nil
		}
	}
	return "", fmt.Errorf("--mode %q: must be one of iptables, nftables, ipvs, userspace", name)
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
