package iptables

import "strings"

// Fields splits a rule into its words the way iptables-restore does:
// at spaces, keeping double-quoted strings (with \" and \\ escapes) whole
// and unquoted.
func (r Rule) Fields() []string {
	s := string(r)
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted = !quoted
			inWord = true
		case c == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// Target returns the rule's jump or goto target ("KUBE-SVC-X", "DNAT"), or
// "" for a rule without one.
func (r Rule) Target() string {
	f := r.Fields()
	for i := len(f) - 2; i >= 0; i-- {
		if f[i] == "-j" || f[i] == "-g" {
			return f[i+1]
		}
	}
	return ""
}
