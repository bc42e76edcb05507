package cluster

import (
	"bytes"
	"encoding/json"
)

// The decoder reads a List's items and an object's top-level fields as
// slices of the document rather than copies (json.RawMessage copies): on
// a 10k-Service snapshot each copy is tens of megabytes. The scanners
// check the separators between members and items, not the values; a
// caller that has not checked the document checks those (see lazy in
// decode.go). On anything else they return ok false.

// jsonField is one member of a JSON object: its key, and its value as a
// slice of the object, which starts at offset at.
type jsonField struct {
	key string
	val []byte
	at  int
}

// jsonFields are an object's members, in order.
type jsonFields []jsonField

// get is the value of key, or nil; as encoding/json, the last of
// duplicate keys wins.
func (fs jsonFields) get(key string) []byte {
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].key == key {
			return fs[i].val
		}
	}
	return nil
}

// jsonObjectFields returns the members of a JSON object. Separators must
// be where JSON puts them; the members' values are not checked.
func jsonObjectFields(obj []byte) (jsonFields, bool) {
	var fields jsonFields
	ok := jsonEachField(obj, func(f jsonField) bool {
		fields = append(fields, f)
		return true
	})
	if !ok {
		return nil, false
	}
	return fields, true
}

// jsonEachField calls fn with each member of a JSON object in order, until
// fn returns false. It reports whether the members it read were well
// separated and, if fn never stopped it, the object was whole.
func jsonEachField(obj []byte, fn func(jsonField) bool) bool {
	i := jsonSkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	if i = jsonSkipSpace(obj, i+1); i < len(obj) && obj[i] == '}' {
		return jsonSkipSpace(obj, i+1) == len(obj)
	}
	for i < len(obj) {
		end := jsonValueEnd(obj, i)
		key, ok := jsonString(obj[i:end])
		if !ok {
			return false
		}
		if i = jsonSkipSpace(obj, end); i >= len(obj) || obj[i] != ':' {
			return false
		}
		i = jsonSkipSpace(obj, i+1)
		end = jsonValueEnd(obj, i)
		if end <= i {
			return false
		}
		if !fn(jsonField{key: key, val: obj[i:end:end], at: i}) {
			return true
		}
		if i, ok = jsonNext(obj, end, '}'); !ok || i == len(obj) {
			return ok
		}
	}
	return false
}

// jsonNext reads, from the end of a member or an item at i, either a
// comma (returning where the next one starts) or the closing bracket,
// which must end b (returning len(b)).
func jsonNext(b []byte, i int, closing byte) (int, bool) {
	i = jsonSkipSpace(b, i)
	switch {
	case i < len(b) && b[i] == ',':
		i = jsonSkipSpace(b, i+1)
		return i, i < len(b) && b[i] != closing
	case i < len(b) && b[i] == closing:
		return len(b), jsonSkipSpace(b, i+1) == len(b)
	}
	return i, false
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
	i := jsonSkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, false
	}
	var items [][]byte
	if i = jsonSkipSpace(arr, i+1); i < len(arr) && arr[i] == ']' {
		return items, jsonSkipSpace(arr, i+1) == len(arr)
	}
	for i < len(arr) {
		end := jsonValueEnd(arr, i)
		if end <= i {
			return nil, false
		}
		items = append(items, arr[i:end:end])
		var ok bool
		if i, ok = jsonNext(arr, end, ']'); !ok || i == len(arr) {
			return items, ok
		}
	}
	return nil, false
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
