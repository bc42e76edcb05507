package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// document is one YAML document or one JSON value of a snapshot file.
type document struct {
	line int // 1-based line of the file where the document starts
	data []byte
	json bool  // data is JSON already
	err  error // the file is broken at this document
	// fields are data's members when data is an object whose items the
	// lazy split cut on its way (a List, see jsonScanObject); nil otherwise.
	fields jsonFields
}

// splitDocuments cuts a file into its non-empty documents. A file whose
// first character is '{' is read as a stream of JSON values (kubectl -o json
// prints one), unless it is not JSON but is YAML in flow style; anything
// else as YAML documents separated by "---" lines. Documents holding only
// blank lines and comments are dropped here, so document numbers count what
// a reader sees.
func splitDocuments(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return splitYAML(data)
	}
	docs := splitJSON(data)
	if len(docs) != 1 || docs[0].err == nil {
		return docs // JSON, or a JSON stream broken after its first value
	}
	yamlDocs := splitYAML(data)
	for _, d := range yamlDocs {
		if _, _, err := yamlToJSON(d.data, d.line); err != nil {
			return docs // broken either way: report the JSON error
		}
	}
	return yamlDocs
}

func splitJSON(data []byte) []document {
	if docs, ok := splitValidJSON(data); ok {
		return docs
	}
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs
		}
		doc := document{line: lineAt(data, skipSpace(data, start)), data: raw, json: true}
		if err != nil {
			doc.err = jsonSyntaxError(data, err)
			return append(docs, doc)
		}
		docs = append(docs, doc)
	}
}

// splitValidJSON cuts a stream of JSON values into slices of data, not
// copies (a decoder copies each value twice); ok is false when a value is
// not valid JSON, for the decoder to say where.
func splitValidJSON(data []byte) (docs []document, ok bool) {
	return splitJSONValues(data, true)
}

// splitJSONLazy cuts a file that starts as a JSON stream does into its
// values as splitValidJSON does, without checking them: for a lazy
// reading (decode.go).
func splitJSONLazy(data []byte) (docs []document, ok bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	return splitJSONValues(data, false)
}

func splitJSONValues(data []byte, check bool) (docs []document, ok bool) {
	line, counted := 1, 0
	var members jsonFields // reused from one document to the next
	for i := jsonSkipSpace(data, 0); i < len(data); {
		end, fields := 0, jsonFields(nil)
		if check {
			end = jsonValueEnd(data, i)
		} else if end, fields = jsonScanDocument(data, i, members[:0]); fields != nil {
			members = fields[:0]
		}
		if end <= i || check && !json.Valid(data[i:end]) {
			return nil, false
		}
		line += bytes.Count(data[counted:i], []byte("\n"))
		counted = i
		doc := document{line: line, data: data[i:end:end], json: true}
		if fields.anyCut() {
			// The scan placed each member in data; the document's
			// fields are placed in the document, as jsonObjectFields
			// places them (validWithout cuts the document at them).
			doc.fields = slices.Clone(fields)
			for k := range doc.fields {
				doc.fields[k].at -= i
			}
		}
		docs = append(docs, doc)
		i = jsonSkipSpace(data, end)
	}
	return docs, true
}

// jsonScanDocument finds the end of the JSON value at data[i]. When it is
// an object whose members are well separated, it also returns them,
// appended to members, with an "items" array cut into its items: the
// one pass over a List that both the split and the decoder need.
func jsonScanDocument(data []byte, i int, members jsonFields) (int, jsonFields) {
	end, ok := jsonScanObject(data, i, listItemsKey, func(f jsonField) {
		members = append(members, f)
	})
	if !ok {
		return jsonValueEnd(data, i), nil
	}
	return end, members
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n"), data[off]) >= 0 {
		off++
	}
	return off
}

// lineAt is the 1-based line holding byte offset off.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func jsonSyntaxError(data []byte, err error) error {
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		return err
	}
	// Offset counts the bytes read, the offending one included.
	pos := min(max(syn.Offset-1, 0), int64(len(data)))
	col := pos - int64(bytes.LastIndexByte(data[:pos], '\n'))
	return fmt.Errorf("line %d, column %d: %w", lineAt(data, pos), col, err)
}

func splitYAML(data []byte) []document {
	var docs []document
	var cur docText
	start, line := 1, 0
	flush := func() {
		if b := cur.bytes(data); !blankYAML(b) {
			docs = append(docs, document{line: start, data: b})
		}
		cur = docText{}
	}
	for off := 0; off < len(data); {
		l := data[off:]
		if i := bytes.IndexByte(l, '\n'); i >= 0 {
			l = l[:i+1]
		}
		at := off
		off += len(l)
		line++
		if after, ok := documentSeparator(l); ok {
			flush()
			start = line + 1
			if after != nil {
				start = line
			}
			cur.add(data, off-len(after), len(after))
			continue
		}
		if bytes.Equal(bytes.TrimRight(l, " \t\r\n"), []byte("...")) {
			continue // document end marker
		}
		cur.add(data, at, len(l))
	}
	flush()
	return docs
}

// docText is one document's text: a run of the file's bytes, which it
// nearly always is, or a copy when a line was left out of the middle.
type docText struct {
	begin, end int
	copied     []byte
}

func (d *docText) add(data []byte, at, n int) {
	switch {
	case n == 0:
	case d.copied != nil:
		d.copied = append(d.copied, data[at:at+n]...)
	case d.begin == d.end:
		d.begin, d.end = at, at+n
	case d.end == at:
		d.end += n
	default:
		d.copied = append(append([]byte(nil), data[d.begin:d.end]...), data[at:at+n]...)
	}
}

func (d *docText) bytes(data []byte) []byte {
	if d.copied != nil {
		return d.copied
	}
	return data[d.begin:d.end:d.end]
}

// documentSeparator reports whether line is a "---" document start, and
// returns what follows it on the line, if content ("--- {a: 1}").
func documentSeparator(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return nil, false
	}
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\r' && rest[0] != '\n' {
		return nil, false // "----" or "---x" is content
	}
	if trimmed := bytes.TrimSpace(rest); len(trimmed) == 0 || trimmed[0] == '#' {
		return nil, true
	}
	// The rest of the line as it is: a slice of it, never a modified
	// copy, so that splitYAML can keep the document a slice of the file.
	return rest, true
}

// blankYAML reports whether doc holds only blank lines, comments and directives.
func blankYAML(doc []byte) bool {
	for l := range bytes.Lines(doc) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return false
		}
	}
	return true
}

var yamlLineRE = regexp.MustCompile(`\bline (\d+)`)

// yamlToJSON converts one YAML document, rejecting duplicate keys, and makes
// the line numbers in errors count from the start of the file. The YAML
// parser is third-party code fed untrusted input; a panic in it becomes an
// error.
//
// fields are the document's members where the block path cut a List's
// items (blockYAMLToJSON), nil otherwise.
func yamlToJSON(doc []byte, startLine int) (out []byte, fields jsonFields, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, fields, err = nil, nil, fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	if out, fields, err = fastYAMLToJSON(doc); err == nil || errors.Is(err, errChangedWhileRead) {
		return out, fields, err
	}
	// The fast paths refuse anchors and aliases; this one expands them,
	// so it may only have a document whose aliases stay within bounds.
	if err = inputlimit.CheckAliases(doc); err == nil {
		out, err = yaml.YAMLToJSONStrict(doc)
	}
	if err == nil {
		return out, nil, nil
	}
	if errors.As(err, new(*inputlimit.ExpansionError)) {
		return nil, nil, err
	}
	lines := strings.Split(err.Error(), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	msg := yamlLineRE.ReplaceAllStringFunc(strings.Join(lines, " "), func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+startLine-1)
	})
	return nil, nil, errors.New(msg)
}
