package cluster

import (
	"slices"
	"strings"
)

// blockYAMLToJSON converts the block-style YAML that kubectl and
// sigs.k8s.io/yaml print (indented mappings, "- " sequences, one-line
// plain and quoted scalars, {} and []) without building a node tree, at
// a fraction of a general parser's cost. Anything else in the document
// (comments, flow collections, block or multi-line scalars, tabs,
// anchors, tags, escapes other than \" \\ \n \t) is errSlowPath, and the
// document goes to fastYAMLToJSON, then sigs.k8s.io/yaml.
//
// Where it converts a List's items in parallel, it also returns the
// members of the document's mapping as jsonObjectFields reads them from
// its JSON, items cut, so that the decoder need not scan that JSON again;
// the fields are nil otherwise.
func blockYAMLToJSON(doc []byte) ([]byte, jsonFields, error) {
	var members []blockMember
	out, err := convertBlock(doc, true, &members)
	if err != nil || !slices.ContainsFunc(members, func(m blockMember) bool { return m.items != nil }) {
		return out, nil, err
	}
	fields := make(jsonFields, len(members))
	for i, m := range members {
		fields[i] = jsonField{key: m.key, at: m.start, val: out[m.start:m.end:m.end], cut: m.items != nil}
		if m.items != nil {
			fields[i].items = make([][]byte, len(m.items))
			for j, span := range m.items {
				fields[i].items[j] = out[span[0]:span[1]:span[1]]
			}
		}
	}
	return out, fields, nil
}

// convertBlock is blockYAMLToJSON's conversion; parallel lets a long
// sequence's items be converted on every CPU. Where members is not nil,
// it records there the members of the document's mapping (blockMember).
func convertBlock(doc []byte, parallel bool, members *[]blockMember) ([]byte, error) {
	lines, err := blockLines(doc)
	if err != nil {
		return nil, err
	}
	p := &blockParser{lines: lines, top: parallel, members: members}
	// The JSON of a block YAML document is up to about 1.5 times as long
	// (quotes and commas for indentation). Twice the length is never
	// regrown, and the part that is not written is never touched.
	out, err := p.node(make([]byte, 0, 2*len(doc)+64), lines[0].indent)
	if err == nil && p.pos != len(p.lines) {
		err = errSlowPath
	}
	return out, err
}

type blockParser struct {
	lines []blockLine
	pos   int
	top   bool // the document's parser, not one of an item's
	// members, where not nil, receives the members of the document's
	// mapping (see blockMember); a document that is a sequence has none.
	members *[]blockMember
	// With wantItems, items receives the spans of the items of a sequence
	// converted in parallel whose "[" is written at itemsAt: the value of
	// the document's items member.
	wantItems bool
	itemsAt   int
	items     [][2]int
}

// node parses the mapping or sequence whose lines start at column indent.
func (p *blockParser) node(out []byte, indent int) ([]byte, error) {
	if p.pos >= len(p.lines) || p.lines[p.pos].indent != indent {
		return nil, errSlowPath
	}
	if t := p.lines[p.pos].text; t == "-" || strings.HasPrefix(t, "- ") {
		p.members = nil // an item's mapping is not the document's
		return p.sequence(out, indent)
	}
	return p.mapping(out, indent)
}

func (p *blockParser) sequence(out []byte, indent int) ([]byte, error) {
	if p.top {
		if starts, end := p.itemStarts(indent); len(starts) >= minPerWorker {
			return p.sequenceParallel(out, indent, starts, end)
		}
	}
	out = append(out, '[')
	for n := 0; p.pos < len(p.lines) && p.lines[p.pos].indent == indent; n++ {
		if !strings.HasPrefix(p.lines[p.pos].text, "- ") {
			break
		}
		if n > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = p.item(out, indent); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

// item converts the sequence item whose "- " line is at p.pos.
func (p *blockParser) item(out []byte, indent int) ([]byte, error) {
	item := strings.TrimPrefix(p.lines[p.pos].text, "- ")
	if strings.HasPrefix(item, " ") {
		return nil, errSlowPath // the item's column is not indent+2
	}
	if _, _, isKey := splitKey(item); isKey || item == "-" || strings.HasPrefix(item, "- ") {
		// "- key: v" opens a mapping two columns in.
		p.lines[p.pos] = blockLine{indent: indent + 2, text: item}
		return p.node(out, indent+2)
	}
	p.pos++
	return blockScalar(out, item)
}

// itemStarts finds the lines of the sequence at p.pos: the line where
// each item starts, and the line after the sequence.
func (p *blockParser) itemStarts(indent int) (starts []int, end int) {
	for end = p.pos; end < len(p.lines); end++ {
		l := p.lines[end]
		if l.indent < indent || l.indent == indent && !strings.HasPrefix(l.text, "- ") {
			break
		}
		if l.indent == indent {
			starts = append(starts, end)
		}
	}
	return starts, end
}

// sequenceParallel converts the items of a long sequence (a List's) on
// every CPU, each with a parser of its own lines, and joins them. An item
// that does not use up its lines is errSlowPath, as in sequence, where
// the line left over would end the sequence and be left over at the end.
func (p *blockParser) sequenceParallel(out []byte, indent int, starts []int, end int) ([]byte, error) {
	parts := make([][]byte, len(starts))
	errs := make([]error, len(starts))
	forEach(len(starts), func(k int) {
		// The lines are views of the file, which may be mapped: a fault
		// here (the file shrank since its lines were cut) is
		// errChangedWhileRead, as on the decoding goroutines, not a crash.
		defer guardFault(func(err error) { errs[k] = err })()
		next := end
		if k+1 < len(starts) {
			next = starts[k+1]
		}
		sub := &blockParser{lines: p.lines[starts[k]:next]}
		size := 64
		for _, l := range sub.lines {
			size += 2*len(l.text) + 4
		}
		parts[k], errs[k] = sub.item(make([]byte, 0, size), indent)
		if errs[k] == nil && sub.pos != len(sub.lines) {
			errs[k] = errSlowPath
		}
	})
	record := p.wantItems && p.itemsAt == len(out)
	out = append(out, '[')
	for k, part := range parts {
		if errs[k] != nil {
			return nil, errs[k]
		}
		if k > 0 {
			out = append(out, ',')
		}
		start := len(out)
		out = append(out, part...)
		if record {
			p.items = append(p.items, [2]int{start, len(out)})
		}
	}
	p.pos = end
	return append(out, ']'), nil
}

// mapping writes the mapping's pairs straight into out, in their order
// (a JSON object's key order means nothing), so that no value is built
// apart and copied: a snapshot is one deep document, and each copy at each
// level touched fresh memory.
func (p *blockParser) mapping(out []byte, indent int) ([]byte, error) {
	out = append(out, '{')
	members := p.members
	p.members = nil // the mappings within are not the document's
	var keys blockKeys
	for p.pos < len(p.lines) && p.lines[p.pos].indent == indent && !strings.HasPrefix(p.lines[p.pos].text, "- ") {
		key, rest, ok := splitKey(p.lines[p.pos].text)
		if !ok || !keys.add(key) {
			return nil, errSlowPath // a duplicate key: the slow path names it
		}
		if keys.n > 1 {
			out = append(out, ',')
		}
		out = append(appendString(out, key), ':')
		p.pos++
		start := len(out)
		if members != nil && key == listItemsKey {
			p.wantItems, p.itemsAt, p.items = true, start, nil
		}
		var err error
		if out, err = p.value(out, indent, rest); err != nil {
			return nil, err
		}
		if members != nil {
			m := blockMember{key: key, start: start, end: len(out)}
			if key == listItemsKey {
				m.items = p.items
				p.wantItems, p.items = false, nil
			}
			*members = append(*members, m)
		}
	}
	if keys.n == 0 {
		return nil, errSlowPath
	}
	return append(out, '}'), nil
}

// value converts the value of the key whose line was just read, rest
// being what followed its colon.
func (p *blockParser) value(out []byte, indent int, rest string) ([]byte, error) {
	switch {
	case rest != "":
		return blockScalar(out, rest)
	case p.pos < len(p.lines) && p.lines[p.pos].indent > indent:
		return p.node(out, p.lines[p.pos].indent)
	case p.pos < len(p.lines) && p.lines[p.pos].indent == indent && strings.HasPrefix(p.lines[p.pos].text, "- "):
		return p.sequence(out, indent)
	}
	return append(out, "null"...), nil
}

// blockMember is one member of a document's mapping as the block path
// wrote it: its value is out[start:end]. For the items of a List
// converted in parallel, items holds each item's span (nil otherwise), so
// that the decoder need not scan the document's JSON again to find them.
type blockMember struct {
	key        string
	start, end int
	items      [][2]int
}

// blockKeys are the keys of one mapping: held inline while there are
// few (a mapping is parsed without allocating for its keys), in a set
// beyond.
type blockKeys struct {
	n    int
	list [8]string
	set  map[string]struct{}
}

// add records key and reports whether it is new.
func (k *blockKeys) add(key string) bool {
	if k.n < len(k.list) {
		if slices.Contains(k.list[:k.n], key) {
			return false
		}
		k.list[k.n] = key
		k.n++
		return true
	}
	if k.set == nil {
		k.set = make(map[string]struct{}, 2*len(k.list))
		for _, l := range k.list {
			k.set[l] = struct{}{}
		}
	}
	if _, dup := k.set[key]; dup {
		return false
	}
	k.set[key] = struct{}{}
	k.n++
	return true
}

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
