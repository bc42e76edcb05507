package iptables

import (
	"fmt"
	"strings"
)

// Limits of the kernel's x_tables, which both backends keep.
const (
	// CommentMaxLen is the longest comment the kernel keeps: struct
	// xt_comment_info holds XT_MAX_COMMENT_LEN (256) bytes with the NUL,
	// and iptables cuts a longer comment to this length.
	CommentMaxLen = 255
	// ChainNameMaxLen is the longest chain name (XT_EXTENSION_MAXNAMELEN
	// 29, with the NUL).
	ChainNameMaxLen = 28
)

// Validate checks that every chain name and rule can be written to
// iptables-restore as it stands: a rule or name that could end its line
// or its quoting early would smuggle in rules of its own. apply refuses a
// desired ruleset that fails; a render from validated objects never does.
func (rs *Ruleset) Validate() error {
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			if err := ValidateChainName(c.Name); err != nil {
				return fmt.Errorf("%s table %s: %w", rs.Family, t.Name, err)
			}
			for _, r := range c.Rules {
				if err := ValidateRule(r); err != nil {
					return fmt.Errorf("%s table %s chain %s: %w", rs.Family, t.Name, c.Name, err)
				}
			}
		}
	}
	return nil
}

// ValidateChainName checks a chain name as iptables does, and refuses any
// character that would change the meaning of a restore line.
func ValidateChainName(name string) error {
	switch {
	case name == "" || len(name) > ChainNameMaxLen:
		return fmt.Errorf("chain name %q: must be 1 to %d characters", name, ChainNameMaxLen)
	case name[0] == '-' || name[0] == '!':
		return fmt.Errorf("chain name %q: must not start with - or !", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' || r == '\'' }):
		return fmt.Errorf("chain name %q: must not hold spaces, quotes or control characters", name)
	}
	return nil
}

// ValidateRule refuses a rule holding a control character: a newline
// would end the restore line inside the rule and start another.
func ValidateRule(r Rule) error {
	if i := strings.IndexFunc(string(r), func(c rune) bool { return c < ' ' || c == 0x7f }); i >= 0 {
		return fmt.Errorf("rule %q: control character at byte %d", string(r), i)
	}
	return nil
}
