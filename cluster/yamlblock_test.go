package cluster

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// A List long enough to be converted item by item on every CPU converts
// to the same JSON as one converted line by line; a broken item sends
// both to the slow path, and an item that the block path does not take
// but YAML does costs only itself.
func TestBlockYAMLParallelItems(t *testing.T) {
	list := func(broken func(i int) string) []byte {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nitems:\n")
		for i := range 3 * minPerWorker {
			fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: s%d\n  spec:\n    ports:\n    - port: %d\n      name: \"p\"\n    - 7\n", i, i)
			b.WriteString(broken(i))
		}
		b.WriteString("kind: List\nmetadata: {}\n")
		return []byte(b.String())
	}
	scalars := []byte("items:\n" + strings.Repeat("- a\n- 1\n- \"q\"\n", minPerWorker) + "kind: List\n")
	for name, doc := range map[string][]byte{
		"services":             list(func(int) string { return "" }),
		"scalar items":         scalars,
		"an item's line left":  list(func(i int) string { return map[bool]string{true: "      stray: 1\n"}[i == 100] }),
		"an item too far in":   list(func(i int) string { return map[bool]string{true: "-  x: 1\n"}[i == 150] }),
		"a key after the list": list(func(i int) string { return map[bool]string{true: "other: 1\n"}[i == 190] }),
	} {
		want, wantErr := convertBlock(bytes.Clone(doc), false, nil)
		got, gotErr := convertBlock(bytes.Clone(doc), true, nil)
		if name == "an item too far in" {
			// That item alone goes to the slow path (slowItem), and the
			// List with it is what sigs.k8s.io/yaml makes of it.
			sigs, err := yaml.YAMLToJSONStrict(doc)
			if wantErr == nil || gotErr != nil || err != nil || !sameJSON(t, got, sigs) {
				t.Errorf("%s: parallel gives %.80q, %v; line by line %v; sigs.k8s.io/yaml %.80q, %v", name, got, gotErr, wantErr, sigs, err)
			}
			continue
		}
		if gotErr != wantErr || wantErr == nil && !bytes.Equal(got, want) {
			t.Errorf("%s: parallel gives %.80q, %v; line by line %.80q, %v", name, got, gotErr, want, wantErr)
		}
		if name == "services" && (wantErr != nil || !bytes.Contains(want, []byte(`"name":"s191"`))) {
			t.Errorf("%s: line by line gives %.80q, %v; want the whole List", name, want, wantErr)
		}
	}
}

// TestBlockFieldsAreTheScanners: where the block path cuts a List's items
// as it converts them, its members are the ones jsonObjectFields reads
// from its JSON, items cut alike; a List converted line by line, or whose
// long sequence is not its items, has none.
func TestBlockFieldsAreTheScanners(t *testing.T) {
	items := func(n int, key string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: v1\n%s:\n", key)
		for i := range n {
			fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: s%d\n", i)
		}
		b.WriteString("kind: List\nmetadata:\n  resourceVersion: \"1\"\n")
		return b.String()
	}
	nested := "apiVersion: v1\nitems:\n  inner:\n" + strings.Repeat("  - a\n", 2*minPerWorker) + "kind: List\n"
	// A sequence whose first item is a long List: the document is not one.
	var inSequence strings.Builder
	inSequence.WriteString("- apiVersion: v1\n  items:\n")
	for i := range 2 * minPerWorker {
		fmt.Fprintf(&inSequence, "  - apiVersion: v1\n    kind: Node\n    metadata:\n      name: n%d\n", i)
	}
	inSequence.WriteString("  kind: List\n")
	for name, tc := range map[string]struct {
		doc  string
		want bool // fields expected
	}{
		"a long List":                  {items(3*minPerWorker, "items"), true},
		"a short List":                 {items(minPerWorker-1, "items"), false},
		"a long sequence not items":    {items(3*minPerWorker, "other"), false},
		"a long sequence within items": {nested, false},
		"a List as a sequence's item":  {inSequence.String(), false},
	} {
		out, fields, err := blockYAMLToJSON([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (fields != nil) != tc.want {
			t.Errorf("%s: fields %v, want them: %v", name, fields != nil, tc.want)
			continue
		}
		if fields == nil {
			continue
		}
		want, ok := jsonObjectFields(out)
		if !ok || len(fields) != len(want) {
			t.Fatalf("%s: %d fields; the scanner reads %d (%v)", name, len(fields), len(want), ok)
		}
		for i, f := range fields {
			w := want[i]
			if f.key != w.key || f.at != w.at || !bytes.Equal(f.val, w.val) || f.cut != w.cut || len(f.items) != len(w.items) {
				t.Errorf("%s: member %d is %q at %d (cut %v, %d items); the scanner's %q at %d (cut %v, %d items)",
					name, i, f.key, f.at, f.cut, len(f.items), w.key, w.at, w.cut, len(w.items))
				continue
			}
			for j := range f.items {
				if !bytes.Equal(f.items[j], w.items[j]) {
					t.Errorf("%s: %s[%d] = %.60q, the scanner's %.60q", name, f.key, j, f.items[j], w.items[j])
				}
			}
		}
	}
}

// TestDecodeSequenceOfALongList: a YAML document that is a sequence is not
// a Kubernetes object, however long the List that is its first item.
func TestDecodeSequenceOfALongList(t *testing.T) {
	var b strings.Builder
	b.WriteString("- apiVersion: v1\n  items:\n")
	for i := range 2 * minPerWorker {
		fmt.Fprintf(&b, "  - apiVersion: v1\n    kind: Node\n    metadata:\n      name: n%d\n", i)
	}
	b.WriteString("  kind: List\n")
	snap, err := Decode("seq.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "not a Kubernetes object") {
		t.Errorf("decoded %d Nodes, error %v; want not a Kubernetes object", len(snap.Nodes), err)
	}
}
