package nftables

import "strconv"

// QuoteString returns s as an nft quoted string: "s". nft's quoted strings
// have no escapes, so one holding a double quote or a control character
// cannot be written: its quote would end the string early and the rest
// would be read as more of the rule. A renderer has no error to return,
// so for such an s QuoteString returns text that Validate (and ValidateRules) refuses (a NUL,
// then s quoted as Go quotes it) and apply checks before it writes
// anything, the --dry-run script included.
func QuoteString(s string) string {
	if Quotable(s) {
		return `"` + s + `"`
	}
	return "\x00" + strconv.Quote(s)
}

// Quotable reports whether s can be written as an nft quoted string.
func Quotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f || c == '"' {
			return false
		}
	}
	return true
}

// hasControl reports whether s holds a control character, which no rule
// written on one line of nft's text may hold.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return true
		}
	}
	return false
}
