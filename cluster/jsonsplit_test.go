package cluster

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzJSONSplit: on any input the scanners stay within it and cut a
// stream only into valid values; on valid JSON they find the fields and
// items that encoding/json finds.
func FuzzJSONSplit(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"List","items":[{"a":1},{"b":[1,2,{"c":"]"}]}, "x", 3, null, true]}`,
		` { "k" : "v\"}" , "n":-1.5e3 , "k":{"dup":"last wins"} } `,
		`[ ]`, `{}`, `[{"a\u0022b":"\\"}, [[]], ""]`, `"not an object"`, `12`,
		`{""0""0""0""00"0`, `["\`, `{"a":[1,2`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for i := range doc {
			if end := jsonValueEnd(doc, i); end > len(doc) {
				t.Fatalf("%q: value at %d ends at %d, past the end", doc, i, end)
			}
			if got, want := valueEnd(doc, i), valueEndBytewise(doc, i); got != want {
				t.Fatalf("%q: value at %d ends at %d, bytewise at %d", doc, i, got, want)
			}
			checkScanDocument(t, doc, i)
		}
		if docs, ok := splitValidJSON(doc); ok {
			for _, d := range docs {
				if !json.Valid(d.data) {
					t.Fatalf("%q: a document of the stream is not valid: %q", doc, d.data)
				}
			}
		}
		// encoding/json reads invalid UTF-8 as U+FFFD; the decoder calls
		// the scanners only on text that utf8Text accepted.
		if !json.Valid(doc) || !utf8.Valid(doc) {
			return
		}
		var wantFields map[string]json.RawMessage
		if json.Unmarshal(doc, &wantFields) == nil && wantFields != nil {
			fields, ok := jsonObjectFields(doc)
			got := map[string][]byte{}
			for _, f := range fields {
				got[f.key] = f.val
				if !bytes.Equal(doc[f.at:f.at+len(f.val)], f.val) {
					t.Fatalf("%q: field %q is not at %d", doc, f.key, f.at)
				}
			}
			if !ok || len(got) != len(wantFields) {
				t.Fatalf("%q: fields %q (%v), want %q", doc, got, ok, wantFields)
			}
			for k, v := range wantFields {
				if !sameCompact(got[k], v) {
					t.Fatalf("%q: field %q is %q, want %q", doc, k, got[k], v)
				}
			}
		}
		var wantItems []json.RawMessage
		if json.Unmarshal(doc, &wantItems) == nil && wantItems != nil {
			got, ok := jsonArrayItems(doc)
			if !ok || len(got) != len(wantItems) {
				t.Fatalf("%q: items %q (%v), want %q", doc, got, ok, wantItems)
			}
			for i := range got {
				if !sameCompact(got[i], wantItems[i]) {
					t.Fatalf("%q: item %d is %q, want %q", doc, i, got[i], wantItems[i])
				}
			}
		}
	})
}

// checkScanDocument holds the one-pass scan of a document to the scanners
// it stands for: the same end as jsonValueEnd, and the same items as
// jsonArrayItems for each array it cut.
func checkScanDocument(t *testing.T, doc []byte, i int) {
	t.Helper()
	end, fields := jsonScanDocument(doc, i, nil)
	if want := jsonValueEnd(doc, i); end != want {
		t.Fatalf("%q: the document at %d ends at %d, jsonValueEnd says %d", doc, i, end, want)
	}
	for _, f := range fields {
		if !f.cut {
			continue
		}
		want, ok := jsonArrayItems(f.val)
		if !ok || len(want) != len(f.items) {
			t.Fatalf("%q: %q cut into %q, jsonArrayItems gives %q (%v)", doc, f.key, f.items, want, ok)
		}
		for k := range want {
			if !bytes.Equal(want[k], f.items[k]) {
				t.Fatalf("%q: %q item %d is %q, jsonArrayItems gives %q", doc, f.key, k, f.items[k], want[k])
			}
		}
	}
}

func sameCompact(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}
