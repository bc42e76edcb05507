package iptables

import (
	"slices"
	"strings"
)

// Ownership says which part of the iptables tables one mode owns and how
// its chains are compared. It is plain data: render declares each mode's
// value (the iptables mode's chains, the ipvs mode's helper chains, the
// userspace mode's portal chains), and diff and apply act on the value
// they are given without knowing which mode it is. Everything it does not
// name is foreign and is never changed.
type Ownership struct {
	// Chains are the fixed user-defined chains the mode owns, per table.
	Chains map[TableName][]string `json:"chains"`
	// Prefixes are the name prefixes of the mode's per-service and
	// per-endpoint chains, per table ("KUBE-SVC-").
	Prefixes map[TableName][]string `json:"prefixes,omitempty"`
	// Shared are owned chains that another program (kubelet) writes too:
	// their contents are compared only when the mode renders rules into
	// them, and neither they nor the jumps to them are ever deleted.
	Shared []string `json:"shared,omitempty"`
	// Unordered are the chains, per table, whose rule order has no meaning
	// apart from the trailing rules that carry LastMarker: kube-proxy
	// writes them in Go map order, so a node it wrote must compare equal
	// whatever the order.
	Unordered map[TableName][]string `json:"unordered,omitempty"`
	// LastMarker is the comment text of the rules that must end an
	// unordered chain.
	LastMarker string `json:"lastMarker,omitempty"`
	// JumpMatches are the match modules (-m) that the mode's jump rules in
	// built-in chains may carry besides -j. A rule in a built-in chain is
	// the mode's only if it jumps to an owned chain and carries no other
	// option, so a user's own rule into a KUBE- chain stays foreign.
	JumpMatches []string `json:"jumpMatches"`
}

// Owns reports whether a user-defined chain of table is the mode's.
func (o *Ownership) Owns(table TableName, chain string) bool {
	if slices.Contains(o.Chains[table], chain) {
		return true
	}
	for _, p := range o.Prefixes[table] {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// IsShared reports whether chain's contents are shared with another program.
func (o *Ownership) IsShared(chain string) bool { return slices.Contains(o.Shared, chain) }

// IsUnordered reports whether the order of chain's rules, apart from the
// trailing must-be-last rules, has no meaning.
func (o *Ownership) IsUnordered(table TableName, chain string) bool {
	return slices.Contains(o.Unordered[table], chain)
}

// MustBeLast reports whether r is a rule that must end its chain.
func (o *Ownership) MustBeLast(r Rule) bool {
	return o.LastMarker != "" && strings.Contains(string(r), o.LastMarker)
}

// OwnsJump reports whether a rule in a built-in chain of table is one of
// the mode's jump rules: a jump to an owned chain with nothing but the
// allowed matches and their options (a conntrack state, a destination
// type, a comment).
func (o *Ownership) OwnsJump(table TableName, r Rule) bool {
	if !o.Owns(table, r.Target()) {
		return false
	}
	f := r.Fields()
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case "-m":
			if i+1 >= len(f) || !slices.Contains(o.JumpMatches, f[i+1]) {
				return false
			}
			i++
		case "--ctstate", "--comment", "--dst-type", "-j":
			i++
		default:
			return false
		}
	}
	return true
}
