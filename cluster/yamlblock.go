package cluster

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

// blockYAMLToJSON converts the block-style YAML that kubectl and
// sigs.k8s.io/yaml print (indented mappings, "- " sequences, one-line
// plain and quoted scalars, {} and []) without building a node tree, at
// a fraction of a general parser's cost. Anything else in the document
// (comments, flow collections, block or multi-line scalars, tabs,
// anchors, tags, escapes other than \" \\ \n \t) is errSlowPath, and the
// document goes to fastYAMLToJSON, then sigs.k8s.io/yaml.
func blockYAMLToJSON(doc []byte) ([]byte, error) {
	if !printable(doc) {
		return nil, errSlowPath
	}
	p := &blockParser{}
	for _, l := range bytes.Split(doc, []byte("\n")) {
		s := string(l)
		if strings.TrimLeft(s, " ") == "" {
			continue
		}
		if strings.ContainsAny(s, "\t\r#&*!|>`%@") {
			return nil, errSlowPath
		}
		p.lines = append(p.lines, blockLine{indent: len(s) - len(strings.TrimLeft(s, " ")), text: strings.TrimRight(strings.TrimLeft(s, " "), " ")})
	}
	if len(p.lines) == 0 {
		return nil, errSlowPath
	}
	out, err := p.node(nil, p.lines[0].indent)
	if err == nil && p.pos != len(p.lines) {
		err = errSlowPath
	}
	return out, err
}

type blockLine struct {
	indent int
	text   string
}

type blockParser struct {
	lines []blockLine
	pos   int
}

// node parses the mapping or sequence whose lines start at column indent.
func (p *blockParser) node(out []byte, indent int) ([]byte, error) {
	if p.pos >= len(p.lines) || p.lines[p.pos].indent != indent {
		return nil, errSlowPath
	}
	if t := p.lines[p.pos].text; t == "-" || strings.HasPrefix(t, "- ") {
		return p.sequence(out, indent)
	}
	return p.mapping(out, indent)
}

func (p *blockParser) sequence(out []byte, indent int) ([]byte, error) {
	out = append(out, '[')
	for n := 0; p.pos < len(p.lines) && p.lines[p.pos].indent == indent; n++ {
		l := p.lines[p.pos]
		item, ok := strings.CutPrefix(l.text, "- ")
		if !ok {
			break
		}
		if strings.HasPrefix(item, " ") {
			return nil, errSlowPath // the item's column is not indent+2
		}
		if n > 0 {
			out = append(out, ',')
		}
		var err error
		if _, _, isKey := splitKey(item); isKey || item == "-" || strings.HasPrefix(item, "- ") {
			// "- key: v" opens a mapping two columns in.
			p.lines[p.pos] = blockLine{indent: indent + 2, text: item}
			out, err = p.node(out, indent+2)
		} else {
			p.pos++
			out, err = blockScalar(out, item)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

type blockPair struct {
	key   string
	value []byte
}

func (p *blockParser) mapping(out []byte, indent int) ([]byte, error) {
	var pairs []blockPair
	for p.pos < len(p.lines) && p.lines[p.pos].indent == indent && !strings.HasPrefix(p.lines[p.pos].text, "- ") {
		key, rest, ok := splitKey(p.lines[p.pos].text)
		if !ok {
			return nil, errSlowPath
		}
		p.pos++
		var v []byte
		var err error
		switch {
		case rest != "":
			v, err = blockScalar(nil, rest)
		case p.pos < len(p.lines) && p.lines[p.pos].indent > indent:
			v, err = p.node(nil, p.lines[p.pos].indent)
		case p.pos < len(p.lines) && p.lines[p.pos].indent == indent && strings.HasPrefix(p.lines[p.pos].text, "- "):
			v, err = p.sequence(nil, indent)
		default:
			v = []byte("null")
		}
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, blockPair{key, v})
	}
	if len(pairs) == 0 {
		return nil, errSlowPath
	}
	slices.SortFunc(pairs, func(a, b blockPair) int { return strings.Compare(a.key, b.key) })
	out = append(out, '{')
	for i, kv := range pairs {
		if i > 0 {
			if pairs[i-1].key == kv.key {
				return nil, errSlowPath
			}
			out = append(out, ',')
		}
		out = appendString(out, kv.key)
		out = append(out, ':')
		out = append(out, kv.value...)
	}
	return append(out, '}'), nil
}

// splitKey cuts "key: rest" or "key:"; the key is a plain or quoted
// string.
func splitKey(s string) (key, rest string, ok bool) {
	var raw string
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		k, n, qok := quoted(s)
		if !qok || !strings.HasPrefix(s[n:], ":") {
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

// plainOK: a one-line plain scalar that cannot be anything else.
func plainOK(s string) bool {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}\"'") || strings.Contains(s, ": ") || strings.Contains(s, " #") ||
		strings.HasSuffix(s, ":") || strings.ContainsAny(s, "[]{},") {
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

// printable reports whether doc holds only what YAML allows in a stream
// (its c-printable set) besides tabs and carriage returns, and no line
// break but "\n": the block path leaves the rest to the general parser.
func printable(doc []byte) bool {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError, r < 0xa0, r >= 0xd800 && r < 0xe000, r == 0xfffe, r == 0xffff,
			r == 0x2028, r == 0x2029, r == 0xfeff: // YAML 1.1 line breaks, and a mark
			return false
		}
		i += n
	}
	return true
}
