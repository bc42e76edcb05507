package cluster

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A List long enough to be converted item by item on every CPU converts
// to the same JSON as one converted line by line, and a broken item sends
// both to the slow path.
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
		want, wantErr := convertBlock(bytes.Clone(doc), false)
		got, gotErr := convertBlock(bytes.Clone(doc), true)
		if gotErr != wantErr || wantErr == nil && !bytes.Equal(got, want) {
			t.Errorf("%s: parallel gives %.80q, %v; line by line %.80q, %v", name, got, gotErr, want, wantErr)
		}
		if name == "services" && (wantErr != nil || !bytes.Contains(want, []byte(`"name":"s191"`))) {
			t.Errorf("%s: line by line gives %.80q, %v; want the whole List", name, want, wantErr)
		}
	}
}
