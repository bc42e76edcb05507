package cli

import (
	"slices"
	"strings"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applyipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ipvs"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// The fingerprints of the owned live state that a saved plan records, per
// kernel table, in each mode: the text of exactly what the diff compares.

// iptablesLive fingerprints the owned chains and jump rules of each table.
func iptablesLive(own *ipt.Ownership) func(*applyipt.Plan) []savedplan.Table {
	return func(p *applyipt.Plan) []savedplan.Table {
		return ownedIPTablesTables(diff.OwnedIPTables(p.Live, own))
	}
}

func ownedIPTablesTables(owned *ipt.Ruleset) []savedplan.Table {
	var out []savedplan.Table
	for _, t := range owned.Tables {
		one := &ipt.Ruleset{Family: owned.Family, Tables: []*ipt.Table{t}}
		out = append(out, savedplan.Table{
			Name:   string(owned.Family) + " " + string(t.Name),
			SHA256: savedplan.Digest([]byte(one.String())),
		})
	}
	return out
}

// nftLive fingerprints the kube-proxy table of the plan's family, which
// the tool owns whole; a missing table has a fingerprint too.
func nftLive(p *applynft.Plan) []savedplan.Table {
	text := "no table\n"
	if p.Live != nil {
		text = p.Live.String()
	}
	return []savedplan.Table{{Name: string(p.Family) + " kube-proxy", SHA256: savedplan.Digest([]byte(text))}}
}

// ipvsLive fingerprints the owned virtual servers, sets and kube-ipvs0
// addresses of a family as one table, in sorted lines since the kernel
// lists them in no set order, and the helper chains per iptables table.
func ipvsLive(own *ipvs.Ownership) func(*applyipvs.Plan) []savedplan.Table {
	return func(p *applyipvs.Plan) []savedplan.Table {
		owned := diff.OwnedIPVS(p.Desired, p.Live, own)
		chains := owned.IPTables
		owned.IPTables = nil
		lines := strings.SplitAfter(owned.String(), "\n")
		slices.Sort(lines)
		out := []savedplan.Table{{Name: string(owned.Family) + " ipvs", SHA256: savedplan.Digest([]byte(strings.Join(lines, "")))}}
		if chains != nil {
			out = append(out, ownedIPTablesTables(chains)...)
		}
		return out
	}
}

// liveTables returns the fingerprints of every plan's live state.
func (p *modePlan[P]) liveTables() []savedplan.Table {
	var out []savedplan.Table
	for _, pl := range p.plans {
		out = append(out, p.live(pl)...)
	}
	return out
}
