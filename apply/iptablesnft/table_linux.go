package iptablesnft

import (
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// builtin is a chain iptables-nft creates as a base chain: its hook and
// priority (NF_IP_PRI_*, which golang.org/x/sys/unix lacks).
type builtin struct {
	name     string
	hook     uint32
	priority int32
}

// builtins are the base chains of the tables the tool reads, in the order
// iptables-nft-save prints them; it prints each, present or not.
var builtins = map[ipt.TableName][]builtin{
	ipt.Filter: {{"INPUT", unix.NF_INET_LOCAL_IN, 0}, {"FORWARD", unix.NF_INET_FORWARD, 0}, {"OUTPUT", unix.NF_INET_LOCAL_OUT, 0}},
	ipt.NAT: {
		{"PREROUTING", unix.NF_INET_PRE_ROUTING, -100}, {"INPUT", unix.NF_INET_LOCAL_IN, 100},
		{"OUTPUT", unix.NF_INET_LOCAL_OUT, -100}, {"POSTROUTING", unix.NF_INET_POST_ROUTING, 100},
	},
}

// chainTypes are the nf_tables chain types of the tables' base chains.
var chainTypes = map[ipt.TableName]string{ipt.Filter: "filter", ipt.NAT: "nat"}

// order returns the chains in iptables-nft-save's order, the built-in
// ones first (absent ones as ACCEPT with no counters) and then the others
// by name. A base chain that is not the table's built-in chain, hooked as
// iptables-nft hooks it, is refused.
func order(table ipt.TableName, chains []nftables.RawChain) ([]nftables.RawChain, error) {
	want, ok := builtins[table]
	if !ok {
		return nil, unknown("table %s", table)
	}
	byName := map[string]nftables.RawChain{}
	var user []nftables.RawChain
	for _, c := range chains {
		if _, dup := byName[c.Name]; dup {
			return nil, unknown("chain %s twice", c.Name)
		}
		byName[c.Name] = c
		if !ipt.IsBuiltin(table, c.Name) {
			if c.Base {
				return nil, unknown("base chain %s", c.Name)
			}
			user = append(user, c)
		}
	}
	out := make([]nftables.RawChain, 0, len(chains)+len(want))
	for _, b := range want {
		c, ok := byName[b.name]
		if !ok {
			out = append(out, nftables.RawChain{Name: b.name, Base: true, Hook: b.hook, Priority: b.priority, Type: chainTypes[table], Accept: true})
			continue
		}
		if !c.Base || c.Hook != b.hook || c.Priority != b.priority || c.Type != chainTypes[table] {
			return nil, unknown("chain %s is not iptables' built-in chain", c.Name)
		}
		out = append(out, c)
	}
	slices.SortFunc(user, func(a, b nftables.RawChain) int { return strings.Compare(a.Name, b.Name) })
	return append(out, user...), nil
}

// appendHeader appends a chain's ":" line.
func appendHeader(buf []byte, c nftables.RawChain) []byte {
	buf = append(append(buf, ':'), c.Name...)
	switch {
	case !c.Base:
		buf = append(buf, " - ["...)
	case c.Accept:
		buf = append(buf, " ACCEPT ["...)
	default:
		buf = append(buf, " DROP ["...)
	}
	buf = strconv.AppendUint(buf, c.Packets, 10)
	buf = append(buf, ':')
	buf = strconv.AppendUint(buf, c.Bytes, 10)
	return append(buf, "]\n"...)
}
