package cluster

import "strings"

// splitKey cuts "key: rest" or "key:"; the key is a plain or quoted
// string. A key whose colon is more than maxSimpleKey bytes in is not
// one: go-yaml finds no key there (and fails on the colon), so the
// line goes to the slow path, which says so.
func splitKey(s string) (key, rest string, ok bool) {
	var raw string
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		k, n, qok := quoted(s)
		if !qok || !strings.HasPrefix(s[n:], ":") || n > maxSimpleKey {
			return "", "", false
		}
		key, rest = k, s[n+1:]
	} else {
		i := strings.Index(s, ": ")
		if i < 0 {
			if !strings.HasSuffix(s, ":") {
				return "", "", false
			}
			i = len(s) - 1
		}
		if i > maxSimpleKey {
			return "", "", false
		}
		raw, rest = s[:i], s[i+1:]
		if !plainOK(raw) || strings.HasSuffix(raw, " ") {
			return "", "", false
		}
		if kind, _ := resolvePlain(raw); kind != plainString {
			return "", "", false
		}
		key = raw
	}
	if rest != "" && rest[0] != ' ' {
		return "", "", false
	}
	return key, strings.TrimLeft(rest, " "), true
}

// maxSimpleKey is how far into its line YAML's scanner (go-yaml's, as
// libyaml's) looks for the colon of a key: 1024 characters. Counted here
// in bytes, which are never fewer.
const maxSimpleKey = 1024

// plainOK: a one-line plain scalar in block context that cannot be
// anything else. There, only its first character may be a flow indicator
// or a quote: within it, "," "[" "]" "{" "}" and quotes are text, as in
// the keys of managedFields (k:{"port":80,"protocol":"TCP"}), which
// kubectl prints plain. A colon ends it only before a space or the end of
// the line, and " #" starts a comment (the lines that reach here hold no
// "#", blockText). A leading "|" is a literal scalar, which blockLiteral
// reads.
func plainOK(s string) bool {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}\"'|") || strings.Contains(s, ": ") || strings.Contains(s, " #") ||
		strings.HasSuffix(s, ":") {
		return s != "" && s[0] == '-' && len(s) > 1 && s[1] >= '0' && s[1] <= '9' && !strings.ContainsAny(s, ":[]{},#")
	}
	return true
}

func blockScalar(out []byte, s string) ([]byte, error) {
	switch {
	case s == "{}":
		return append(out, "{}"...), nil
	case s == "[]":
		return append(out, "[]"...), nil
	case s[0] == '"' || s[0] == '\'':
		v, n, ok := quoted(s)
		if !ok || n != len(s) {
			return nil, errSlowPath
		}
		return appendString(out, v), nil
	case !plainOK(s):
		return nil, errSlowPath
	}
	switch kind, lit := resolvePlain(s); kind {
	case plainString:
		return appendString(out, s), nil
	case plainLiteral:
		return append(out, lit...), nil
	}
	return nil, errSlowPath
}

// quoted reads a one-line quoted scalar at the start of s: its value and
// length.
func quoted(s string) (string, int, bool) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), i + 1, true
		case c == '\\' && q == '"':
			if i+1 >= len(s) || !strings.ContainsRune(`"\nt`, rune(s[i+1])) {
				return "", 0, false
			}
			i++
			b.WriteByte(map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 't': '\t'}[s[i]])
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
