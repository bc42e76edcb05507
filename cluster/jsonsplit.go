package cluster

import (
	"bytes"
	"encoding/json"
)

// The decoder reads a List's items and an object's top-level fields as
// slices of the document rather than copies (json.RawMessage copies): on
// a 10k-Service snapshot each copy is tens of megabytes. These scanners
// expect valid JSON (json.Valid was checked on the whole document) and
// return ok false for anything else.

// jsonObjectFields returns the top-level fields of a JSON object, each
// value a slice of obj; as encoding/json, the last of duplicate keys wins.
func jsonObjectFields(obj []byte) (map[string][]byte, bool) {
	i := jsonSkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	fields := map[string][]byte{}
	for i = jsonSkipSpace(obj, i+1); i < len(obj) && obj[i] != '}'; {
		end := jsonValueEnd(obj, i)
		key, ok := jsonString(obj[i:end])
		if !ok {
			return nil, false
		}
		i = jsonSkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = jsonSkipSpace(obj, i+1)
		end = jsonValueEnd(obj, i)
		fields[key] = obj[i:end:end]
		i = jsonSkipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = jsonSkipSpace(obj, i+1)
		}
	}
	return fields, i < len(obj)
}

// jsonString is the string that the JSON string literal lit holds. Input
// that passed utf8Text is valid UTF-8, so a literal without escapes holds
// its bytes as they are; one with escapes goes to encoding/json.
func jsonString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), true
	}
	var s string
	return s, json.Unmarshal(lit, &s) == nil
}

// jsonArrayItems returns the items of a JSON array as slices of arr.
func jsonArrayItems(arr []byte) ([][]byte, bool) {
	i := jsonSkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, false
	}
	var items [][]byte
	for i = jsonSkipSpace(arr, i+1); i < len(arr) && arr[i] != ']'; {
		end := jsonValueEnd(arr, i)
		items = append(items, arr[i:end:end])
		i = jsonSkipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = jsonSkipSpace(arr, i+1)
		}
	}
	return items, i < len(arr)
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
// opening quote is at i.
func jsonStringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return i
}

func jsonSkipSpace(b []byte, i int) int {
	for i < len(b) && bytes.IndexByte([]byte(" \t\r\n"), b[i]) >= 0 {
		i++
	}
	return i
}
