package cluster

import (
	"slices"
	"strings"
	"unsafe"
)

// blockYAMLToJSON converts the block-style YAML that kubectl and
// sigs.k8s.io/yaml print (indented mappings, "- " sequences, one-line
// plain and quoted scalars, {} and []) without building a node tree, at
// a fraction of a general parser's cost. It reads literal block scalars
// ("|", "|-", "|2"), which kubectl prints for any string with a line
// break, last-applied-configuration among them. Anything else (comments,
// flow collections, folded or multi-line flow scalars, tabs, anchors,
// tags, escapes other than \" \\ \n \t) is errSlowPath: in an item of a
// long List, for that item alone (yamlitem.go), elsewhere for the
// document, which goes to fastYAMLToJSON, then sigs.k8s.io/yaml.
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
	p := &blockParser{doc: unsafe.String(unsafe.SliceData(doc), len(doc)), end: len(doc), lines: lines, top: parallel, members: members}
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
	doc   string // the document, of which lines are views
	end   int    // where the parser's lines end in doc
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
		p.lines[p.pos] = blockLine{indent: indent + 2, start: p.lines[p.pos].start, text: item}
		return p.node(out, indent+2)
	}
	if !blockText(item) {
		return nil, errSlowPath
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
		sub := &blockParser{doc: p.doc, end: p.lineStart(next), lines: p.lines[starts[k]:next]}
		size := 64
		for _, l := range sub.lines {
			size += 2*len(l.text) + 4
		}
		parts[k], errs[k] = sub.item(make([]byte, 0, size), indent)
		if errs[k] == nil && sub.pos != len(sub.lines) {
			errs[k] = errSlowPath
		}
		if errs[k] == errSlowPath {
			parts[k], errs[k] = slowItem(p.doc[sub.lines[0].start:sub.end])
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
		text := p.lines[p.pos].text
		if !blockText(text) {
			return nil, errSlowPath
		}
		key, rest, ok := splitKey(text)
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
	case rest != "" && rest[0] == '|':
		return p.literal(out, indent, rest)
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

// lineStart is where line i of the parser's lines starts in the
// document, or the end of its lines.
func (p *blockParser) lineStart(i int) int {
	if i < len(p.lines) {
		return p.lines[i].start
	}
	return p.end
}
