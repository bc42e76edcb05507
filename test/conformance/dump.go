package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Mode is a proxy mode the runner compares.
type Mode string

const (
	IPTables Mode = "iptables"
	NFTables Mode = "nftables"
	// IPVS is compared inside the IPVS test VM (test/conformance/ipvsvm),
	// not by TestConformance: the host kernel may lack IPVS.
	IPVS Mode = "ipvs"
)

// Modes are the modes TestConformance compares on the host, in report order.
var Modes = []Mode{IPTables, NFTables}

var families = []nodetable.Family{nodetable.IPv4, nodetable.IPv6}

// saveCommand is the nf_tables backend's iptables-save for a family.
func saveCommand(f nodetable.Family) string {
	if f == nodetable.IPv6 {
		return "ip6tables-nft-save"
	}
	return "iptables-nft-save"
}

func restoreCommand(f nodetable.Family) string {
	if f == nodetable.IPv6 {
		return "ip6tables-nft-restore"
	}
	return "iptables-nft-restore"
}

func nftFamily(f nodetable.Family) string {
	if f == nodetable.IPv6 {
		return "ip6"
	}
	return "ip"
}

// Dump reads what the mode programmed in ns, both families, in canonical
// form. A family without a kube-proxy table (nftables) dumps as nothing.
func Dump(ctx context.Context, ns netlab.NS, mode Mode) (Canonical, error) {
	var out Canonical
	for _, f := range families {
		var lines []string
		switch mode {
		case IPTables:
			data, err := ns.Run(ctx, saveCommand(f))
			if err != nil {
				return nil, err
			}
			if lines, err = CanonicalIPTables(data, f); err != nil {
				return nil, fmt.Errorf("%s in %s: %w", saveCommand(f), ns.Name(), err)
			}
		case NFTables:
			data, err := ns.Run(ctx, "nft", "list", "table", nftFamily(f), "kube-proxy")
			if err != nil {
				if strings.Contains(err.Error(), "No such file or directory") {
					continue
				}
				return nil, err
			}
			if lines, err = CanonicalNFTables(data); err != nil {
				return nil, fmt.Errorf("nft list table %s kube-proxy in %s: %w", nftFamily(f), ns.Name(), err)
			}
		}
		out = append(out, lines...)
	}
	return out, nil
}

// LoadIPTables loads rendered rulesets into ns with iptables-nft-restore,
// which in a fresh namespace writes exactly them, after creating the
// nfacct counters their rules may name, as apply does.
func LoadIPTables(ctx context.Context, ns netlab.NS, sets []*ipt.Ruleset) error {
	if usesNFAcct(sets) {
		if err := ns.EnsureNFAcct(); err != nil {
			return err
		}
	}
	for _, rs := range sets {
		if _, err := ns.RunInput(ctx, []byte(rs.String()), restoreCommand(rs.Family)); err != nil {
			return err
		}
	}
	return nil
}

// usesNFAcct reports whether a rule of sets names an nfacct counter.
func usesNFAcct(sets []*ipt.Ruleset) bool {
	for _, rs := range sets {
		if strings.Contains(rs.String(), " -m nfacct ") {
			return true
		}
	}
	return false
}

// LoadNFTables loads rendered tables into ns with `nft -f`.
func LoadNFTables(ctx context.Context, ns netlab.NS, sets []*nft.Ruleset) error {
	for _, rs := range sets {
		if _, err := ns.RunInput(ctx, []byte(rs.Script()), "nft", "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}
