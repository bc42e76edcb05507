package cluster

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The decoder reads a List's items and an object's top-level fields as
// slices of the document rather than copies (json.RawMessage copies): on
// a 10k-Service snapshot each copy is tens of megabytes. The scanners
// check the separators between members and items, not the values; a
// caller that has not checked the document checks those (see lazy in
// decode.go). On anything else they return ok false.

// jsonField is one member of a JSON object: its key, and its value as a
// slice of the object, which starts at offset at. When the scan cut the
// value into its items on the way (see jsonScanObject), cut is true and
// items holds them.
type jsonField struct {
	key   string
	val   []byte
	at    int
	items [][]byte
	cut   bool
}

// jsonFields are an object's members, in order.
type jsonFields []jsonField

// get is the value of key, or nil; as encoding/json, the last of
// duplicate keys wins.
func (fs jsonFields) get(key string) []byte {
	if f := fs.last(key); f != nil {
		return f.val
	}
	return nil
}

// cutItems is the items of the value of key, when the scan cut them; the
// last of duplicate keys wins, as in get.
func (fs jsonFields) cutItems(key string) ([][]byte, bool) {
	if f := fs.last(key); f != nil {
		return f.items, f.cut
	}
	return nil, false
}

// anyCut reports whether the scan cut any member's value into items.
func (fs jsonFields) anyCut() bool {
	return slices.ContainsFunc(fs, func(f jsonField) bool { return f.cut })
}

func (fs jsonFields) last(key string) *jsonField {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].key == key {
			return &fs[i]
		}
	}
	return nil
}

// listItemsKey is the member whose array value the scanners cut into its
// items as they find its end: a List's items. Finding the end of a 10k
// List's items and then cutting them were two passes over nearly all of
// the file, on one CPU.
const listItemsKey = "items"

// jsonObjectFields returns the members of a JSON object, with the items
// of an "items" array cut. Separators must be where JSON puts them; the
// members' values are not checked.
func jsonObjectFields(obj []byte) (jsonFields, bool) {
	var fields jsonFields
	end, ok := jsonScanObject(obj, jsonSkipSpace(obj, 0), listItemsKey, func(f jsonField) {
		fields = append(fields, f)
	})
	if !ok || jsonSkipSpace(obj, end) != len(obj) {
		return nil, false
	}
	return fields, true
}

// jsonScanObject reads the members of the object that opens at b[i] and
// calls fn with each in order. The value of a member named cut, when it
// is an array, is cut into its items as its end is found. It returns the
// offset just past the closing brace; ok reports whether the members
// were well separated.
func jsonScanObject(b []byte, i int, cut string, fn func(jsonField)) (end int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	if i = jsonSkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		f, ok := jsonMember(b, i, cut)
		if !ok {
			return 0, false
		}
		fn(f)
		next, closed, ok := jsonAfter(b, f.at+len(f.val), '}')
		if !ok || closed {
			return next, ok
		}
		i = next
	}
}

// jsonMember reads the member whose key starts at b[i].
func jsonMember(b []byte, i int, cut string) (jsonField, bool) {
	key, at, ok := jsonKey(b, i)
	if !ok {
		return jsonField{}, false
	}
	f := jsonField{key: key, at: at}
	end := 0
	if key == cut {
		f.items, end, f.cut = jsonArraySplit(b, at)
	}
	if !f.cut {
		f.items, end = nil, jsonValueEnd(b, at)
	}
	if end <= at {
		return jsonField{}, false
	}
	f.val = b[at:end:end]
	return f, true
}

// jsonKey reads the key that starts at b[i] and the colon after it, and
// returns the key and where its value starts.
func jsonKey(b []byte, i int) (key string, at int, ok bool) {
	end := jsonValueEnd(b, i)
	if key, ok = jsonString(b[i:end]); !ok {
		return "", 0, false
	}
	if i = jsonSkipSpace(b, end); i >= len(b) || b[i] != ':' {
		return "", 0, false
	}
	return key, jsonSkipSpace(b, i+1), true
}

// jsonAfter reads what follows a member or an item that ends at i: either
// a comma (closed false, next where the next one starts) or the closing
// bracket (closed true, next just past it).
func jsonAfter(b []byte, i int, closing byte) (next int, closed, ok bool) {
	i = jsonSkipSpace(b, i)
	switch {
	case i < len(b) && b[i] == ',':
		i = jsonSkipSpace(b, i+1)
		return i, false, i < len(b) && b[i] != closing
	case i < len(b) && b[i] == closing:
		return i + 1, true, true
	}
	return i, false, false
}

// jsonString is the string that the JSON string literal lit holds. Input
// that passed utf8Text is valid UTF-8, so a literal without escapes holds
// its bytes as they are; one with escapes goes to encoding/json.
func jsonString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	if plainJSONString(lit[1 : len(lit)-1]) {
		return string(lit[1 : len(lit)-1]), true
	}
	var s string
	return s, json.Unmarshal(lit, &s) == nil
}

// plainJSONString reports whether b, the inside of a string literal,
// holds no escape, quote or control character: its bytes are the string.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// jsonArrayItems returns the items of a JSON array as slices of arr.
// Separators must be where JSON puts them; the items are not checked.
func jsonArrayItems(arr []byte) ([][]byte, bool) {
	items, end, ok := jsonArraySplit(arr, jsonSkipSpace(arr, 0))
	if !ok || jsonSkipSpace(arr, end) != len(arr) {
		return nil, false
	}
	return items, true
}

// jsonArraySplit cuts the array that opens at b[i] into its items, as
// slices of b, and returns the offset just past its closing bracket.
func jsonArraySplit(b []byte, i int) (items [][]byte, end int, ok bool) {
	end, ok = jsonEachItem(b, i, func(item []byte) { items = append(items, item) })
	if !ok {
		return nil, 0, false
	}
	return items, end, true
}

// jsonEachItem calls fn with each item of the array that opens at b[i],
// as a slice of b, and returns the offset just past its closing bracket.
// Separators must be where JSON puts them; the items are not checked.
func jsonEachItem(b []byte, i int, fn func([]byte)) (end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	if i = jsonSkipSpace(b, i+1); i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		end := jsonValueEnd(b, i)
		if end <= i {
			return 0, false
		}
		fn(b[i:end:end])
		next, closed, ok := jsonAfter(b, end, ']')
		if !ok || closed {
			return next, ok
		}
		i = next
	}
}

// jsonValueEnd is the offset just past the value that starts at i. On
// input that is not valid JSON it returns some offset within b, never
// beyond it: splitValidJSON calls it before json.Valid.
func jsonValueEnd(b []byte, i int) int {
	return min(valueEnd(b, i), len(b))
}

func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		if depth > 0 {
			// Inside an object or array only quotes, brackets and braces
			// matter: skip to the next one eight bytes at a time (the
			// indentation of kubectl's JSON is most of what lies between).
			if i = nextStructural(b, i); i == len(b) {
				break
			}
		}
		switch b[i] {
		case '"':
			i = jsonStringEnd(b, i)
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\r', '\n', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// jsonStringEnd is the offset of the quote that closes the string whose
// opening quote is at i, or len(b). Most of a snapshot's bytes are in
// strings, so it looks for quotes with bytes.IndexByte and then counts
// the backslashes before each.
func jsonStringEnd(b []byte, i int) int {
	open := i
	for {
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return len(b)
		}
		i += 1 + j
		k := i - 1
		for k > open && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i
		}
	}
}

func jsonSkipSpace(b []byte, i int) int {
	for i < len(b) && bytes.IndexByte([]byte(" \t\r\n"), b[i]) >= 0 {
		i++
	}
	return i
}
