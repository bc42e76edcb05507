package inputlimit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// aliasBomb is one string of size bytes, anchored, and uses aliases of it.
func aliasBomb(size, uses int) []byte {
	var b strings.Builder
	b.WriteString("a: &a " + strings.Repeat("x", size) + "\nb:\n")
	for range uses {
		b.WriteString("- *a\n")
	}
	return []byte(b.String())
}

// The probe's case: a 1 MB string aliased 3000 times (3 GB expanded) is
// refused at once, measured without expanding it.
func TestCheckAliasesBomb(t *testing.T) {
	doc := aliasBomb(1<<20, 3000)
	var err error
	n := allocated(func() { err = CheckAliases(doc) })
	var ee *ExpansionError
	if !errors.As(err, &ee) || ee.Limit != 4*int64(len(doc)) {
		t.Fatalf("got %v, want an *ExpansionError with a limit of 4 times %d", err, len(doc))
	}
	if want := fmt.Sprintf("YAML aliases expand the document (%d bytes) to more than %d bytes, the limit (4 times its size, at least 1 MiB)", len(doc), 4*len(doc)); err.Error() != want {
		t.Errorf("message: %v", err)
	}
	if n > 64<<20 {
		t.Errorf("allocated %d MiB checking a %d KiB document", n>>20, len(doc)>>10)
	}
}

// Nested aliases (a "billion laughs") are refused too: each level's node
// is measured once.
func TestCheckAliasesNested(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if err := CheckAliases([]byte(b.String())); !errors.As(err, new(*ExpansionError)) {
		t.Fatalf("got %v, want an *ExpansionError", err)
	}
}

// An alias inside the node its anchor names stands for a node without
// end: CheckNode refuses it, rather than measure forever. CheckAliases
// leaves it to go-yaml, which refuses it on meeting it.
func TestCheckAliasesCycle(t *testing.T) {
	doc := []byte("a: &a [*a, *a]\n")
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	if err := CheckNode(&root, len(doc)); !errors.Is(err, errAliasCycle) {
		t.Fatalf("CheckNode: %v, want %v", err, errAliasCycle)
	}
	if err := CheckAliases(doc); err != nil {
		t.Fatalf("CheckAliases: %v", err)
	}
}

// What people write passes: aliases within the limit, the floor for a
// small file, a "*" or "&" that is no alias, a document without any, and
// a document that expands to exactly its limit.
func TestCheckAliasesAllowed(t *testing.T) {
	for name, doc := range map[string]string{
		"shared labels": "labels: &l {app: web, tier: front}\nselector: *l\nother: *l\n",
		"under floor":   string(aliasBomb(1000, 900)),
		"no anchor":     "glob: '*.example.com'\nb: *x\n",
		"text":          "a: b&c\nd: e*f\n",
		"none":          "apiVersion: v1\nkind: List\nitems: []\n",
	} {
		if err := CheckAliases([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A document may expand to exactly its limit, not a byte more.
func TestCheckAliasesBoundary(t *testing.T) {
	defer func(r, f int64) { ExpansionRatio, ExpansionFloor = r, f }(ExpansionRatio, ExpansionFloor)
	doc := aliasBomb(100, 3) // "a: &a x...x\nb:\n- *a\n- *a\n- *a\n"
	// As JSON spells it: {"a":"x...x","b":["x...x","x...x","x...x"]}, with
	// a separator after each member and item, and the document's own two.
	const expanded = 2 + (2 + (3 + 1) + (102 + 1) + (3 + 1) + (2 + 3*(102+1) + 1)) + 1
	ExpansionRatio, ExpansionFloor = 0, expanded
	if err := CheckAliases(doc); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	ExpansionFloor = expanded - 1
	if err := CheckAliases(doc); !errors.As(err, new(*ExpansionError)) {
		t.Fatalf("a byte over the limit: %v", err)
	}
}

// A document that does not parse, with aliases, is refused with the
// parser's error: its expansion cannot be measured.
func TestCheckAliasesUnparsed(t *testing.T) {
	if err := CheckAliases([]byte("a: &a x\nb: *nope\n")); err == nil || !strings.Contains(err.Error(), "unknown anchor") {
		t.Fatalf("got %v, want the parser's error", err)
	}
}
