// Package nftables models one nftables table as plain data: its sets and
// maps with their elements, and its chains with their rules, each rule kept
// as the text `nft list table` prints for it. That makes a rendered table and
// the table the kernel gives back comparable value for value.
//
// Its one native text form is exactly what `nft list table ip kube-proxy`
// prints (nft 1.0.6): tabs, a blank line between blocks, sets and maps
// before chains, each kind in the order the objects were created. Encode
// writes it and Parse reads it back into the same value. The text is also
// valid `nft -f` input.
//
// Element order: the kernel lists the elements of a hash set in hash order,
// which has no meaning. Values built here keep their elements sorted as
// SortElements sorts them; compare a kernel listing only after calling
// SortElements on it.
package nftables

import (
	"slices"
	"time"
)

// Family is an nftables address family, spelled as nft spells it.
type Family string

const (
	// IPv4 is the "ip" family.
	IPv4 Family = "ip"
	// IPv6 is the "ip6" family.
	IPv6 Family = "ip6"
)

// Ruleset is one nftables table: `table <family> <name> { ... }`.
type Ruleset struct {
	Family Family `json:"family"`
	// Table is the table's name ("kube-proxy").
	Table string `json:"table"`
	// Comment is the table's `comment "..."` (kernel >= 5.10, nft >= 0.9.7);
	// empty for none.
	Comment string `json:"comment,omitempty"`
	// Sets holds the table's named sets and maps in listing (creation) order.
	Sets []*Set `json:"sets,omitempty"`
	// Chains holds the table's chains in listing (creation) order.
	Chains []*Chain `json:"chains,omitempty"`
}

// SetFlag is a set flag as nft prints it after "flags".
type SetFlag string

const (
	FlagConstant SetFlag = "constant"
	FlagInterval SetFlag = "interval"
	// FlagDynamic marks a set that rules update from the packet path
	// (`update @set { ip saddr }`).
	FlagDynamic SetFlag = "dynamic"
	// FlagTimeout lets elements expire (with Timeout as their default).
	FlagTimeout SetFlag = "timeout"
)

// Set is a named set (`set NAME { ... }`) or, when DataType is set, a named
// map (`map NAME { ... }`).
type Set struct {
	Name string `json:"name"`
	// Type is the key type as nft prints it after "type", for example
	// "ipv4_addr" or "ipv4_addr . inet_proto . inet_service".
	Type string `json:"type"`
	// DataType is a map's data type ("verdict"), printed after " : ".
	// Empty for a set.
	DataType string `json:"dataType,omitempty"`
	// Typeof says that Type and DataType are expressions, declared as nft
	// declares a type that has no name: `typeof numgen random mod 1 :
	// ip daddr . th dport` (nft records the expressions in the set's
	// userdata; the kernel sees the types they load).
	Typeof bool `json:"typeof,omitempty"`
	// Size is the maximum number of elements (`size 65535`); 0 is not printed.
	// nft gives a dynamic set that a rule updates a size of 65535 when the
	// set and the rule are added in one transaction.
	Size uint64 `json:"size,omitempty"`
	// Flags are printed after "flags", comma-separated, in this order.
	Flags []SetFlag `json:"flags,omitempty"`
	// Timeout is the default element lifetime (`timeout 3h`); 0 for none.
	// nft prints it in days, hours, minutes and seconds (see FormatDuration).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Comment is the set's `comment "..."`; empty for none.
	Comment string `json:"comment,omitempty"`
	// Elements are the set's elements, sorted as SortElements sorts them.
	Elements []Element `json:"elements,omitempty"`
}

// IsMap reports whether s is a map.
func (s *Set) IsMap() bool { return s.DataType != "" }

// TypeClause is the declaration's type as nft prints it:
// "type ipv4_addr . inet_service : verdict" or
// "typeof numgen random mod 1 : ip daddr . th dport".
func (s *Set) TypeClause() string {
	c := "type " + s.Type
	if s.Typeof {
		c = "typeof " + s.Type
	}
	if s.IsMap() {
		c += " : " + s.DataType
	}
	return c
}

// Element is one element of a set or map, printed as
// `KEY [comment "COMMENT"] [: VALUE]`.
type Element struct {
	// Key is the key as nft prints it, parts of a concatenation joined by
	// " . ": "10.96.0.1 . tcp . 443". A dynamic set's listing may carry
	// "timeout 3h expires 2h59m" after the address; that stays in Key.
	Key string `json:"key"`
	// Value is a map element's value, e.g. "goto service-X-ns/svc/tcp/p" or
	// "drop"; empty for a set element.
	Value string `json:"value,omitempty"`
	// Comment is the element's comment; empty for none.
	Comment string `json:"comment,omitempty"`
}

// ChainType is a base chain's type.
type ChainType string

const (
	FilterType ChainType = "filter"
	NATType    ChainType = "nat"
	RouteType  ChainType = "route"
)

// Hook is the netfilter hook a base chain is attached to.
type Hook string

const (
	PreroutingHook  Hook = "prerouting"
	InputHook       Hook = "input"
	ForwardHook     Hook = "forward"
	OutputHook      Hook = "output"
	PostroutingHook Hook = "postrouting"
)

// Priority is a base chain's priority spelled as nft prints it: a named
// priority where one is defined for the hook ("filter", "dstnat",
// "srcnat"), possibly with an offset ("dstnat - 10"), else a number
// ("-110"; dstnat is only named in prerouting).
type Priority string

// Policy is a base chain's policy.
type Policy string

const (
	Accept Policy = "accept"
	Drop   Policy = "drop"
)

// BaseChain is what makes a chain a base chain, printed as
// `type filter hook input priority filter; policy accept;`.
type BaseChain struct {
	Type     ChainType `json:"type"`
	Hook     Hook      `json:"hook"`
	Priority Priority  `json:"priority"`
	Policy   Policy    `json:"policy"`
}

// Rule is one rule exactly as `nft list` prints it, with its comment at the
// end: `ip daddr @cluster-ips reject comment "Reject traffic to ..."`.
type Rule string

// Chain is a regular chain, or a base chain when Base is set.
type Chain struct {
	Name string     `json:"name"`
	Base *BaseChain `json:"base,omitempty"`
	// Comment is the chain's `comment "..."`; empty for none.
	Comment string `json:"comment,omitempty"`
	Rules   []Rule `json:"rules,omitempty"`
}

// Set returns the named set or map, or nil.
func (rs *Ruleset) Set(name string) *Set {
	for _, s := range rs.Sets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Chain returns the named chain, or nil.
func (rs *Ruleset) Chain(name string) *Chain {
	for _, c := range rs.Chains {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Equal reports whether two rulesets hold the same table, sets, elements
// and chains in the same order. A nil slice equals an empty one.
func (rs *Ruleset) Equal(o *Ruleset) bool {
	if rs.Family != o.Family || rs.Table != o.Table || rs.Comment != o.Comment ||
		len(rs.Sets) != len(o.Sets) || len(rs.Chains) != len(o.Chains) {
		return false
	}
	for i, s := range rs.Sets {
		if !s.Equal(o.Sets[i]) {
			return false
		}
	}
	for i, c := range rs.Chains {
		if !c.Equal(o.Chains[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether two sets have the same declaration and elements in
// the same order.
func (s *Set) Equal(o *Set) bool {
	if s == o {
		return true // a render and the state it left share their sets
	}
	return s.Name == o.Name && s.Type == o.Type && s.DataType == o.DataType && s.Typeof == o.Typeof &&
		s.Size == o.Size && s.Timeout == o.Timeout && s.Comment == o.Comment &&
		slices.Equal(s.Flags, o.Flags) && slices.Equal(s.Elements, o.Elements)
}

// Equal reports whether two chains have the same declaration and rules.
func (c *Chain) Equal(o *Chain) bool {
	if c == o {
		return true
	}
	if c.Name != o.Name || c.Comment != o.Comment || !slices.Equal(c.Rules, o.Rules) {
		return false
	}
	if c.Base == nil || o.Base == nil {
		return c.Base == nil && o.Base == nil
	}
	return *c.Base == *o.Base
}
