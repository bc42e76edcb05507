package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
)

// errSlowPath says that fastYAMLToJSON cannot vouch for a document: the
// document goes through sigs.k8s.io/yaml instead, which decides its
// meaning and words its errors.
var errSlowPath = errors.New("yaml: not on the fast path")

// fastYAMLToJSON converts one YAML document to the JSON that
// sigs.k8s.io/yaml's YAMLToJSONStrict gives for it, but straight from the
// parsed node tree, without the maps and reflection of that route (most
// of the time of loading a YAML snapshot). It handles what kubectl and
// humans write: mappings with string keys, sequences, strings, integers,
// booleans and nulls, resolved with YAML 1.1's rules as that route's
// go-yaml v2 resolves them. Anything else is errSlowPath: tags, anchors
// and aliases, merge keys, duplicate keys, keys that are not strings,
// floats, and any document that does not parse. So it never reports an
// error of its own (but errChangedWhileRead, from a mapped file that
// shrank while read) and never gives a document another meaning.
// Mapping keys come out sorted, as encoding/json writes a map.
//
// fields are the document's members where the block path cut a List's
// items (blockYAMLToJSON), nil otherwise.
func fastYAMLToJSON(doc []byte) (out []byte, fields jsonFields, err error) {
	if out, fields, err := blockYAMLToJSON(doc); err == nil || errors.Is(err, errChangedWhileRead) {
		return out, fields, err
	}
	out, err = treeYAMLToJSON(doc)
	return out, nil, err
}

// treeYAMLToJSON is fastYAMLToJSON without the block path: from the
// parsed node tree.
func treeYAMLToJSON(doc []byte) (out []byte, err error) {
	if bytes.IndexByte(doc, '!') >= 0 && hasTag(doc) {
		return nil, errSlowPath
	}
	defer func() {
		if r := recover(); r != nil {
			if isFault(r) {
				panic(r) // for guardFault: a mapped file shrank
			}
			out, err = nil, errSlowPath
		}
	}()
	var root yamlv3.Node
	if yamlv3.Unmarshal(doc, &root) != nil || root.Kind != yamlv3.DocumentNode || len(root.Content) != 1 {
		return nil, errSlowPath
	}
	return appendJSON(make([]byte, 0, len(doc)), root.Content[0])
}

// hasTag reports whether doc may hold a tag: a "!" at the start of a
// value. It errs towards yes. The parsed tree shows every tag but "!"
// alone, which makes a plain scalar a string in go-yaml v2 and leaves it
// resolved in v3; anchors and aliases show in the tree.
func hasTag(doc []byte) bool {
	for i, c := range doc {
		if c == '!' && (i == 0 || strings.IndexByte(" \t\r\n[{,:-?", doc[i-1]) >= 0 || afterBreakRune(doc[:i])) {
			return true
		}
	}
	return false
}

// afterBreakRune reports whether text ends in one of the characters that
// YAML 1.1 reads as a line break beyond \r and \n (NEL, LS, PS), or in a
// byte order mark, which both go-yaml versions skip: a "!" after any of
// them starts a value. (The fuzzer found "\u0085!", which v2 reads as the
// empty string tagged "!" and v3 as null.)
func afterBreakRune(text []byte) bool {
	switch r, _ := utf8.DecodeLastRune(text); r {
	case 0x85, 0x2028, 0x2029, 0xfeff:
		return true
	}
	return false
}

func appendJSON(out []byte, n *yamlv3.Node) ([]byte, error) {
	if n.Anchor != "" || n.Style&yamlv3.TaggedStyle != 0 {
		return nil, errSlowPath
	}
	switch n.Kind {
	case yamlv3.ScalarNode:
		return appendScalar(out, n)
	case yamlv3.SequenceNode:
		out = append(out, '[')
		for i, c := range n.Content {
			if i > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = appendJSON(out, c); err != nil {
				return nil, err
			}
		}
		return append(out, ']'), nil
	case yamlv3.MappingNode:
		return appendMapping(out, n)
	}
	return nil, errSlowPath
}

func appendMapping(out []byte, n *yamlv3.Node) ([]byte, error) {
	if len(n.Content)%2 != 0 {
		return nil, errSlowPath
	}
	order := make([]int, 0, len(n.Content)/2)
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yamlv3.ScalarNode || k.Anchor != "" || k.Style&yamlv3.TaggedStyle != 0 || !resolvesToString(k) {
			return nil, errSlowPath
		}
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(n.Content[a].Value, n.Content[b].Value) })
	out = append(out, '{')
	for j, i := range order {
		if j > 0 {
			if n.Content[order[j-1]].Value == n.Content[i].Value {
				return nil, errSlowPath // a duplicate key: the slow path reports it
			}
			out = append(out, ',')
		}
		out = appendString(out, n.Content[i].Value)
		out = append(out, ':')
		var err error
		if out, err = appendJSON(out, n.Content[i+1]); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

// resolvesToString: a quoted or block scalar always; a plain one unless
// YAML 1.1 reads it as something else.
func resolvesToString(n *yamlv3.Node) bool {
	if n.Style != 0 {
		return true
	}
	kind, _ := resolvePlain(n.Value)
	return kind == plainString
}

type plainKind int

const (
	plainString  plainKind = iota
	plainLiteral           // true, false, null or an integer, spelled as JSON
	plainOther             // a float, a merge key, or anything unsure
)

func appendScalar(out []byte, n *yamlv3.Node) ([]byte, error) {
	if n.Style != 0 {
		return appendString(out, n.Value), nil
	}
	switch kind, lit := resolvePlain(n.Value); kind {
	case plainString:
		return appendString(out, n.Value), nil
	case plainLiteral:
		return append(out, lit...), nil
	}
	return nil, errSlowPath
}

// resolvePlain reads a plain scalar as go-yaml v2 does (resolve.go):
// YAML 1.1's booleans and nulls by table, then, for text that starts
// like a number, a timestamp (a string, when the target is untyped), an
// integer in any base with "_" separators, or a float. Integers come back
// in decimal, as encoding/json prints the int v2 gives.
func resolvePlain(s string) (plainKind, string) {
	if s == "" {
		return plainLiteral, "null"
	}
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return plainLiteral, "true"
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return plainLiteral, "false"
	case "~", "null", "Null", "NULL":
		return plainLiteral, "null"
	case "<<",
		// YAML's infinities and NaN: floats that JSON cannot hold, which
		// the slow path refuses as sigs.k8s.io/yaml does.
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
		return plainOther, ""
	}
	switch c := s[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			return plainOther, "" // .5, .inf, ...
		}
		return plainString, ""
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		return resolveNumeric(s)
	}
	return plainString, ""
}

func resolveNumeric(s string) (plainKind, string) {
	if looksLikeTimestamp(s) {
		return plainOther, ""
	}
	plain := strings.ReplaceAll(s, "_", "")
	if !mayBeNumber(plain) {
		// What follows would refuse it: spare the parsers' errors, which
		// allocate (an IP address is text of this kind, and a snapshot
		// holds one per endpoint).
		if binaryPrefix(plain) {
			return resolveBinary(plain)
		}
		return plainString, ""
	}
	return parseNumeric(plain)
}

// parseNumeric resolves plain, a scalar without its "_", as an integer
// (in decimal), a float (left to the slow path) or a string.
func parseNumeric(plain string) (plainKind, string) {
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return plainLiteral, strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return plainLiteral, strconv.FormatUint(u, 10)
	}
	if yamlFloat(plain) {
		return plainOther, ""
	}
	if binaryPrefix(plain) {
		return resolveBinary(plain)
	}
	return plainString, ""
}

// binaryPrefix: yaml.v2 tries a plain scalar that starts with "0b" or
// "-0b" (its "_" removed) as an integer in base 2, and no other. A "0b"
// further in is text: a UID such as 935170bb-0001-... is a string, and
// sending it to the slow path sent every object that held one.
func binaryPrefix(plain string) bool {
	return strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b")
}

// resolveBinary reads plain, which has a binaryPrefix, as yaml.v2 does
// last: whatever follows "0b" as base 2, with a sign of its own ("0b+00"
// is 0), as an int64 or, without "-", a uint64; else a string (a UID
// that starts with 0b).
func resolveBinary(plain string) (plainKind, string) {
	if digits, ok := strings.CutPrefix(plain, "-0b"); ok {
		if i, err := strconv.ParseInt("-"+digits, 2, 64); err == nil {
			return plainLiteral, strconv.FormatInt(i, 10)
		}
		return plainString, ""
	}
	if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
		return plainLiteral, strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
		return plainLiteral, strconv.FormatUint(u, 10)
	}
	return plainString, ""
}

// mayBeNumber reports whether strconv's integers (base 0) or yamlFloat
// could take s: at most one '.', and nothing but digits, hex digits, base
// prefixes, signs and '.'.
func mayBeNumber(s string) bool {
	if strings.Count(s, ".") > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		case c == 'x', c == 'X', c == 'o', c == 'O', c == '+', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// looksLikeTimestamp: four digits and a dash, where v2 tries its
// timestamp formats (a string either way when untyped, but left to it).
func looksLikeTimestamp(s string) bool {
	return len(s) > 4 && s[4] == '-' && strings.IndexFunc(s[:4], func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// yamlFloat matches v2's float pattern,
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func yamlFloat(s string) bool {
	digits := func(s string) (string, int) {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return s[n:], n
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	var n int
	if s, n = digits(s); n == 0 {
		if s == "" || s[0] != '.' {
			return false
		}
		if s, n = digits(s[1:]); n == 0 {
			return false
		}
	} else if s != "" && s[0] == '.' {
		s, _ = digits(s[1:])
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '-' || s[0] == '+') {
			s = s[1:]
		}
		if s, n = digits(s); n == 0 {
			return false
		}
	}
	return s == ""
}

// appendString writes s as a JSON string. s is valid UTF-8 (Decode checks
// the file); encoding/json would escape <, > and & too, which only changes
// the spelling.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, fmt.Sprintf("\\u%04x", c)...)
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
