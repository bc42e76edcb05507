// Package iptables models an iptables ruleset as plain data: tables of
// chains of rules, each rule kept in iptables-save's canonical spelling so
// that a rendered rule and the rule the kernel gives back compare as equal
// strings. Its one native text form is the iptables-save/iptables-restore
// format (see Encode and Parse).
package iptables

import "github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"

// TableName is an iptables table ("filter", "nat", ...).
type TableName string

const (
	Filter TableName = "filter"
	NAT    TableName = "nat"
	Mangle TableName = "mangle"
	Raw    TableName = "raw"
)

// builtinChains lists each table's built-in chains in iptables-save's order.
var builtinChains = map[TableName][]string{
	Filter: {"INPUT", "FORWARD", "OUTPUT"},
	NAT:    {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"},
	Mangle: {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"},
	Raw:    {"PREROUTING", "OUTPUT"},
}

// IsBuiltin reports whether chain is a built-in chain of table.
func IsBuiltin(table TableName, chain string) bool {
	for _, c := range builtinChains[table] {
		if c == chain {
			return true
		}
	}
	return false
}

// Rule is one rule as iptables-save prints it after "-A <chain> ", for
// example `-d 10.96.0.1/32 -p tcp -m comment --comment "ns/svc:http cluster IP" -m tcp --dport 443 -j KUBE-SVC-X`.
// Build rules with Builder so that they come out in that canonical order.
type Rule string

// Chain is one chain and its rules in order.
type Chain struct {
	Name string `json:"name"`
	// Policy is the built-in chain's policy ("ACCEPT", "DROP"), or "-" for a
	// user-defined chain and for a built-in chain whose policy is not owned.
	Policy string `json:"policy"`
	Rules  []Rule `json:"rules"`
}

// Table is one iptables table: built-in chains first (in hook order), then
// user-defined chains sorted by name, as iptables-save prints them.
type Table struct {
	Name   TableName `json:"name"`
	Chains []*Chain  `json:"chains"`

	index map[string]*Chain
}

// Ruleset is a set of tables for one IP family (iptables or ip6tables).
type Ruleset struct {
	Family nodetable.Family `json:"family"`
	Tables []*Table         `json:"tables"`
}

// Table returns the named table, or nil.
func (rs *Ruleset) Table(name TableName) *Table {
	for _, t := range rs.Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Chain returns the named chain, or nil.
func (t *Table) Chain(name string) *Chain {
	if len(t.index) != len(t.Chains) {
		// Chains were set or appended directly: index what is new.
		if t.index == nil || len(t.index) > len(t.Chains) {
			t.index = make(map[string]*Chain, len(t.Chains))
		}
		for _, c := range t.Chains {
			if _, ok := t.index[c.Name]; !ok {
				t.index[c.Name] = c
			}
		}
	}
	return t.index[name]
}

// AddChain appends a chain, keeping the name index current.
func (t *Table) AddChain(c *Chain) {
	t.Chains = append(t.Chains, c)
	if t.index != nil && len(t.index) == len(t.Chains)-1 {
		t.index[c.Name] = c
	}
}

// Equal reports whether two rulesets hold the same tables, chains and rules
// in the same order (policies included).
func (rs *Ruleset) Equal(other *Ruleset) bool {
	if rs.Family != other.Family || len(rs.Tables) != len(other.Tables) {
		return false
	}
	for i, t := range rs.Tables {
		o := other.Tables[i]
		if t.Name != o.Name || len(t.Chains) != len(o.Chains) {
			return false
		}
		for j, c := range t.Chains {
			if !c.Equal(o.Chains[j]) {
				return false
			}
		}
	}
	return true
}

// Equal reports whether two chains have the same name, policy and rules.
func (c *Chain) Equal(o *Chain) bool {
	if c.Name != o.Name || c.Policy != o.Policy || len(c.Rules) != len(o.Rules) {
		return false
	}
	for i := range c.Rules {
		if c.Rules[i] != o.Rules[i] {
			return false
		}
	}
	return true
}
