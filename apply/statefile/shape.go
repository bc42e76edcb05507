package statefile

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
)

// TypeShape returns a short digest of the structure of v's type: its
// kinds and its exported fields' names and types, recursively. gob
// decodes into a type that has changed without a word (a field the file
// lacks stays zero), so a gob cache's Format names the shape of the type
// it decodes into, and a build whose types differ ignores the file.
func TypeShape(v any) string {
	var b strings.Builder
	writeShape(&b, reflect.TypeOf(v), map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

func writeShape(b *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	switch t.Kind() {
	case reflect.Pointer:
		b.WriteString("*")
		writeShape(b, t.Elem(), seen)
	case reflect.Slice:
		b.WriteString("[]")
		writeShape(b, t.Elem(), seen)
	case reflect.Array:
		b.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		writeShape(b, t.Elem(), seen)
	case reflect.Map:
		b.WriteString("map[")
		writeShape(b, t.Key(), seen)
		b.WriteString("]")
		writeShape(b, t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			b.WriteString("@" + t.String())
			return
		}
		seen[t] = true
		b.WriteString("struct{")
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				b.WriteString(f.Name + " ")
				writeShape(b, f.Type, seen)
				b.WriteString(";")
			}
		}
		b.WriteString("}")
	default:
		b.WriteString(t.Kind().String())
	}
}
