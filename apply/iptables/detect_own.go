package iptables

import (
	"context"
	"fmt"
	"slices"

	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// TableChain names one chain of one table.
type TableChain struct {
	Table ipt.TableName
	Chain string
}

// kubeletChains are chains that kubelet creates in the backend it uses
// (KUBE-MARK-DROP, KUBE-MARK-MASQ and KUBE-POSTROUTING by kubelets before
// 1.28 or so): rules in them do not show where the tool's rules are.
var kubeletChains = []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT", "KUBE-MARK-DROP", "KUBE-MARK-MASQ", "KUBE-POSTROUTING"}

// ownChains are the fixed chains of own whose rules mark a backend as
// holding the mode's rules: all but the shared ones and kubelet's.
// Filter's come first: that table is the smaller one.
func ownChains(own *ipt.Ownership) []TableChain {
	if own == nil {
		return nil
	}
	var out []TableChain
	for _, t := range []ipt.TableName{ipt.Filter, ipt.NAT} {
		for _, c := range own.Chains[t] {
			if !own.IsShared(c) && !slices.Contains(kubeletChains, c) {
				out = append(out, TableChain{t, c})
			}
		}
	}
	return out
}

// BothBackendsError is a node whose two iptables backends both hold the
// mode's rules: a second copy, which auto-detection cannot choose between.
type BothBackendsError struct {
	Legacy, NFT string // where each holds them: "IPv4 nat KUBE-SERVICES"
}

func (e *BothBackendsError) Error() string {
	return fmt.Sprintf("both iptables backends hold this mode's rules, iptables-legacy (%s) and iptables-nft (%s), "+
		"so --iptables-backend=auto cannot tell which copy is the node's. Remove the copy in the backend the node does not use, "+
		"with the same --mode: `kubectl svcproxy reset --iptables-backend=legacy` or `kubectl svcproxy reset --iptables-backend=nft`; "+
		"or name the backend with --iptables-backend", e.Legacy, e.NFT)
}

// detectOwn decides for the backend that holds the rules of the chains
// named, when nf_tables holds iptables tables (nftTables): then the
// heuristics below could pick legacy for its foreign rules and write a
// second copy there. Without them, nf_tables holds none of the tool's
// rules and legacy, if it holds them, wins anyway. A backend that holds
// them is chosen even against kubelet's hint; both holding them is a
// BothBackendsError. decided is false when neither holds them, or
// nf_tables cannot be asked: the heuristics decide.
func detectOwn(ctx context.Context, ex Execer, p Probe, chains []TableChain, nftTables bool) (b Backend, decided bool, err error) {
	if len(chains) == 0 || !nftTables {
		return "", false, nil
	}
	inNFT, err := p.NFTRules(chains)
	if err != nil {
		return "", false, nil
	}
	inLegacy := ""
	if exist, err := p.LegacyTables(); err == nil && exist {
		if inLegacy, err = p.LegacyRules(chains); err != nil {
			inLegacy = "" // unreadable: decided on nf_tables' answer alone
		}
	}
	switch {
	case inNFT != "" && inLegacy != "":
		return "", true, &BothBackendsError{Legacy: inLegacy, NFT: inNFT}
	case inNFT != "":
		b = NFT
	case inLegacy != "":
		b = Legacy
	default:
		return "", false, nil
	}
	d := detectSide{backend: b}
	if d.checkTools(ctx, ex); d.err != nil {
		return "", true, fmt.Errorf("the %s backend holds this mode's rules, but its tools fail: %w", b, d.err)
	}
	return b, true, nil
}
