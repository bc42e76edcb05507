package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// A JSON object may give a member twice. The API server's strict decoding
// reports it ("duplicate field") and reads both, the later over the
// earlier, as encoding/json does: a string, number or list takes the later
// value, an object keeps the members that only the earlier one has. The
// warnings say which, so that they say what the snapshot now holds. (YAML
// refuses a key given twice, as kubectl's reading of YAML does: an error.)

// duplicateKeys are the keys given more than once among fs, each once,
// in the order of their first repeat.
func (fs jsonFields) duplicateKeys() []string {
	var dups []string
	// times counts each key's uses so far: a hostile file with many keys,
	// each given twice, costs linear time, not quadratic.
	times := make(map[string]int, len(fs))
	for _, f := range fs {
		if times[f.key]++; times[f.key] == 2 {
			dups = append(dups, f.key)
		}
	}
	return dups
}

// strictWarning words one of the strict decoder's errors about obj as a
// warning that says what obj holds: an unknown field is ignored, and a
// duplicate one is read as duplicateWarning says.
func strictWarning(obj any, e error) string {
	var fe interface{ FieldPath() string }
	if errors.As(e, &fe) && strings.HasPrefix(e.Error(), "duplicate field ") {
		return duplicateWarning(obj, fe.FieldPath())
	}
	return fmt.Sprintf("%v: ignored", e)
}

// listDuplicates checks a List's members for keys given twice. Two
// "items" are an error: reading one list would drop the other's objects
// without a word, as the JSON decoder did. Of apiVersion and kind the
// later value is used (readHeader reads the last); the List's other
// members are not read at all. Each gets a warning that says so.
func listDuplicates(loc location, fields jsonFields) (warnings []string, err error) {
	for _, key := range fields.duplicateKeys() {
		switch key {
		case listItemsKey:
			return nil, loc.errorf("duplicate field %q: a List holds one list of objects, and reading the later would drop the earlier's", key)
		case "apiVersion", "kind":
			warnings = append(warnings, fmt.Sprintf("duplicate field %q: the later value is used", key))
		default:
			warnings = append(warnings, fmt.Sprintf("duplicate field %q: ignored, as is the List's %s", key, key))
		}
	}
	return capWarnings(warnings), nil
}

// maxDuplicateWarnings bounds the warnings about one List's duplicate
// keys: a hostile file can repeat thousands.
const maxDuplicateWarnings = 10

// capWarnings keeps the first maxDuplicateWarnings and counts the rest.
func capWarnings(ws []string) []string {
	if len(ws) <= maxDuplicateWarnings {
		return ws
	}
	rest := len(ws) - maxDuplicateWarnings
	return append(ws[:maxDuplicateWarnings:maxDuplicateWarnings], fmt.Sprintf("%d more duplicate fields, ignored as the ones above", rest))
}

// duplicateWarning is the warning about the field at path (as the strict
// decoder names it: "spec.ports[0].port") given twice in an object of
// obj's type, saying which value the object holds.
func duplicateWarning(obj any, path string) string {
	switch fieldKind(reflect.TypeOf(obj), path) {
	case reflect.Struct, reflect.Map:
		return fmt.Sprintf("duplicate field %q: both are read, the later over the earlier: a member in both takes the later value, and a member only in the earlier is kept", path)
	case reflect.Invalid:
		return fmt.Sprintf("duplicate field %q: both are read, the later over the earlier, as the API server reads them", path)
	}
	return fmt.Sprintf("duplicate field %q: the later value is used", path)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// fieldKind is the kind of the value at path in a value of type t, as
// JSON decoding fills it: a type that decodes itself (a Quantity, a
// Time, an IntOrString) is taken whole, as a string is. It is Invalid
// where path cannot be followed, or goes into a map of objects, whose
// keys may hold the dots that separate the path.
func fieldKind(t reflect.Type, path string) reflect.Kind {
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			if path != "" {
				return reflect.Invalid
			}
			return reflect.String
		}
		if path == "" {
			return t.Kind()
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			end := strings.IndexByte(path, ']')
			if path[0] != '[' || end < 0 {
				return reflect.Invalid
			}
			t, path = t.Elem(), strings.TrimPrefix(path[end+1:], ".")
		case reflect.Map:
			if k := fieldKind(t.Elem(), ""); k != reflect.Struct && k != reflect.Map && k != reflect.Slice {
				return k // the rest of the path is one key, whatever dots it holds
			}
			return reflect.Invalid
		case reflect.Struct:
			name, rest := path, ""
			if i := strings.IndexAny(path, ".["); i >= 0 {
				name, rest = path[:i], strings.TrimPrefix(path[i:], ".")
			}
			f, ok := jsonFieldType(t, name)
			if !ok {
				return reflect.Invalid
			}
			t, path = f, rest
		default:
			return reflect.Invalid
		}
	}
}

// jsonFieldType is the type of the field of struct t that JSON names
// name, looking into inline and embedded structs as encoding/json does.
func jsonFieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case tag == "" && f.Anonymous:
			if ft, ok := jsonFieldType(derefType(f.Type), name); ok {
				return ft, true
			}
			continue
		case tag == "":
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
