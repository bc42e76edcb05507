package cli

import (
	"net"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// modeRules are the marks of one mode's rules found on the node.
type modeRules struct {
	mode Mode
	seen []string
}

// The chains whose rules mark a mode, each holding a rule from the first
// sync on: KUBE-POSTROUTING and KUBE-MARK-MASQ are written in iptables and
// ipvs mode (kube-ipvs0 then tells ipvs), the portal chains in userspace
// mode.
var (
	iptablesMarks  = []applyipt.TableChain{{Table: ipt.NAT, Chain: render.ChainPostrouting}, {Table: ipt.NAT, Chain: render.ChainMarkMasq}}
	userspaceMarks = []applyipt.TableChain{{Table: ipt.NAT, Chain: userspace.ChainPortalsContainer}, {Table: ipt.NAT, Chain: userspace.ChainPortalsHost}}
)

// otherModeRules lists the modes other than mode whose rules the node
// holds, kube-proxy's or the tool's alike (they are the same), with what
// showed each. Every probe is cheap and creates nothing: a netlink
// question per nftables table, the interface list, and the x_tables and
// iptables-nft probes of backend detection (applyipt.KernelProbe). A
// probe that fails finds nothing.
//
// iptables and ipvs mode share their fixed chains, so iptables-mode rules
// show only on a node without kube-ipvs0, and never to ipvs mode once it
// created that interface.
func otherModeRules(mode Mode) []modeRules {
	var out []modeRules
	_, err := net.InterfaceByName(ipvs.DummyDevice)
	ipvsDevice := err == nil
	if mode != ModeNFTables {
		if seen := nftTables(); len(seen) > 0 {
			out = append(out, modeRules{ModeNFTables, seen})
		}
	}
	if mode != ModeIPVS && ipvsDevice {
		out = append(out, modeRules{ModeIPVS, []string{"interface " + ipvs.DummyDevice}})
	}
	if mode != ModeIPTables && !ipvsDevice {
		if seen := markedChain(iptablesMarks); seen != "" {
			out = append(out, modeRules{ModeIPTables, []string{seen}})
		}
	}
	if mode != ModeUserspace {
		if seen := markedChain(userspaceMarks); seen != "" {
			out = append(out, modeRules{ModeUserspace, []string{seen}})
		}
	}
	return out
}

// nftTables names the kube-proxy tables that exist.
func nftTables() []string {
	c, err := applynft.Open()
	if err != nil {
		return nil
	}
	defer c.Close()
	var seen []string
	for _, f := range render.NFTablesOwnership().Families {
		if _, found, err := c.RawChains(f, render.NFTablesTable); err == nil && found {
			seen = append(seen, "table "+string(f)+" "+render.NFTablesTable)
		}
	}
	return seen
}

// markedChain names the first of chains that holds a rule, in either
// iptables backend ("IPv4 nat KUBE-POSTROUTING"), or "".
func markedChain(chains []applyipt.TableChain) string {
	var p applyipt.KernelProbe
	if seen, err := p.NFTRules(chains); err == nil && seen != "" {
		return seen + " (iptables-nft)"
	}
	if seen, err := p.LegacyRules(chains); err == nil && seen != "" {
		return seen + " (iptables-legacy)"
	}
	return ""
}
