package nftables

import (
	"errors"
	"fmt"
	"strings"
)

var errBadDuration = errors.New("malformed duration")

// NameLengthMax is the longest table, chain or set name nft accepts
// (NFT_NAME_MAXLEN - 1, as knftables' NameLengthMax).
const NameLengthMax = 256

// CommentLengthMax is the longest comment nft accepts
// (NFT_USERDATA_MAXLEN for comments, as knftables' CommentLengthMax).
const CommentLengthMax = 128

// Validate checks that rs can be written as nft text and read back: names
// are nft identifiers, comments hold no double quote, set elements agree
// with the set's kind and keys are unique.
func (rs *Ruleset) Validate() error {
	if !validFamily(rs.Family) || !validName(rs.Table) {
		return fmt.Errorf("table %s %s: bad family or name", rs.Family, rs.Table)
	}
	if !validComment(rs.Comment) {
		return fmt.Errorf("table %s: bad comment %q", rs.Table, rs.Comment)
	}
	names := map[string]bool{}
	for _, s := range rs.Sets {
		if err := s.validate(); err != nil {
			return err
		}
		if names[s.Name] {
			return fmt.Errorf("set %s: declared twice", s.Name)
		}
		names[s.Name] = true
	}
	clear(names)
	for _, c := range rs.Chains {
		if err := c.validate(); err != nil {
			return err
		}
		if names[c.Name] {
			return fmt.Errorf("chain %s: declared twice", c.Name)
		}
		names[c.Name] = true
	}
	return nil
}

func (s *Set) validate() error {
	if !validName(s.Name) || !validType(s.Type) || (s.DataType != "" && !validType(s.DataType)) {
		return fmt.Errorf("set %q: bad name or type", s.Name)
	}
	if !validComment(s.Comment) {
		return fmt.Errorf("set %s: bad comment %q", s.Name, s.Comment)
	}
	for _, f := range s.Flags {
		if !validWord(string(f)) {
			return fmt.Errorf("set %s: bad flag %q", s.Name, f)
		}
	}
	keys := make(map[string]bool, len(s.Elements))
	for _, e := range s.Elements {
		if !validElementText(e.Key) || (e.Value != "" && !validElementText(e.Value)) || !validComment(e.Comment) {
			return fmt.Errorf("set %s: bad element %+v", s.Name, e)
		}
		if s.IsMap() != (e.Value != "") {
			return fmt.Errorf("set %s: element %s: a map element needs a value and a set element has none", s.Name, e.Key)
		}
		if keys[e.Key] {
			return fmt.Errorf("set %s: element %s given twice", s.Name, e.Key)
		}
		keys[e.Key] = true
	}
	return nil
}

func (c *Chain) validate() error {
	if !validName(c.Name) || !validComment(c.Comment) {
		return fmt.Errorf("chain %q: bad name or comment", c.Name)
	}
	if c.Base != nil && !c.Base.valid() {
		return fmt.Errorf("chain %s: bad base chain %+v", c.Name, *c.Base)
	}
	return c.validateRules()
}

func (c *Chain) validateRules() error {
	for _, r := range c.Rules {
		if !validRule(string(r)) {
			return fmt.Errorf("chain %s: bad rule %q", c.Name, r)
		}
	}
	return nil
}

// ValidateRules checks only the rules of rs, as Validate does: that each
// is one line of nft text that holds no control character. It is the
// part of Validate that apply needs on every plan (a rule is the only
// text a renderer fills with a setting, see QuoteString), at a tenth of
// its cost on a large table.
func (rs *Ruleset) ValidateRules() error {
	for _, c := range rs.Chains {
		if err := c.validateRules(); err != nil {
			return err
		}
	}
	return nil
}

func (b *BaseChain) valid() bool {
	return validWord(string(b.Type)) && validWord(string(b.Hook)) && validWord(string(b.Policy)) &&
		validText(string(b.Priority)) && !strings.ContainsAny(string(b.Priority), ";")
}

func validFamily(f Family) bool {
	switch f {
	case IPv4, IPv6, "inet", "arp", "bridge", "netdev":
		return true
	}
	return false
}

// validName reports whether s is an nft identifier: a letter, "_" or "."
// first, then letters, digits and "/\_.-".
func validName(s string) bool {
	if s == "" || len(s) > NameLengthMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '.':
		case i > 0 && (c >= '0' && c <= '9' || c == '/' || c == '\\' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// validText is non-empty single-line text without surrounding blanks.
func validText(s string) bool {
	return s != "" && s == strings.TrimSpace(s) && !strings.ContainsAny(s, "\n\r")
}

func validWord(s string) bool { return validText(s) && !strings.ContainsAny(s, " \t,;{}\"") }

func validType(s string) bool { return validText(s) && !strings.ContainsAny(s, ",;{}\"") }

func validElementText(s string) bool { return validText(s) && !strings.ContainsAny(s, ",{}\"") }

func validComment(s string) bool {
	return s == "" || (len(s) <= CommentLengthMax && !strings.ContainsAny(s, "\"\n\r"))
}

// validRule is one line of rule text without surrounding blanks and with
// no control character (a NUL is what QuoteString gives a string nft
// cannot hold). One pass over the bytes: apply checks every rule of
// every plan.
func validRule(s string) bool {
	if s == "" || s == "}" || s[0] == ' ' || s[len(s)-1] == ' ' || hasControl(s) {
		return false
	}
	return !strings.HasPrefix(s, "comment ") && !strings.HasPrefix(s, "type ")
}
