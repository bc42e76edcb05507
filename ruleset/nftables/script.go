package nftables

import (
	"bufio"
	"io"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/textform"
)

// EncodeScript writes an `nft -f` script that replaces the table with rs
// in one transaction: it adds the table (so that deleting it cannot fail),
// deletes it, and then declares it as Encode lists it.
//
// The listing is nearly its own script; the one difference is an anonymous
// set in a rule that nft merged down to a single range, which it lists in
// braces ("ip daddr { 10.96.0.0/15 } drop", from "{ 10.96.0.0/16,
// 10.97.0.0/16 }") but would read back as a plain value. The script writes
// such an element twice ("{ 10.96.0.0/15, 10.96.0.0/15 }"), which nft
// merges back into the one-element set it lists.
func (rs *Ruleset) EncodeScript(w io.Writer) error {
	script := *rs
	script.Chains = make([]*Chain, len(rs.Chains))
	for i, c := range rs.Chains {
		script.Chains[i] = c
		for j, r := range c.Rules {
			if s, ok := doubleSingleAddrSets(string(r)); ok {
				if script.Chains[i] == c {
					cc := *c
					cc.Rules = append([]Rule(nil), c.Rules...)
					script.Chains[i] = &cc
				}
				script.Chains[i].Rules[j] = Rule(s)
			}
		}
	}
	return textform.Write(w, func(bw *bufio.Writer) error {
		head := string(rs.Family) + " " + rs.Table
		bw.WriteString("add table " + head + "\ndelete table " + head + "\n")
		script.encode(bw)
		return nil
	})
}

// Script returns the text EncodeScript writes.
func (rs *Ruleset) Script() string { return textform.String(rs.EncodeScript) }

// doubleSingleAddrSets rewrites every "{ X }" in rule whose X is one
// address, prefix or range as "{ X, X }".
func doubleSingleAddrSets(rule string) (string, bool) {
	if !strings.Contains(rule, "{ ") {
		return rule, false
	}
	var b strings.Builder
	changed := false
	rest := rule
	for {
		i := strings.Index(rest, "{ ")
		if i < 0 {
			break
		}
		end := strings.Index(rest[i+2:], " }")
		if end < 0 {
			break
		}
		x := rest[i+2 : i+2+end]
		b.WriteString(rest[:i+2])
		if isAddrToken(x) {
			b.WriteString(x + ", " + x)
			changed = true
		} else {
			b.WriteString(x)
		}
		b.WriteString(" }")
		rest = rest[i+2+end+2:]
	}
	b.WriteString(rest)
	return b.String(), changed
}

// isAddrToken reports whether x looks like one address, prefix or range.
func isAddrToken(x string) bool {
	if x == "" || !strings.ContainsAny(x, ".:") {
		return false
	}
	for i := 0; i < len(x); i++ {
		c := x[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '.', c == ':', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}
