package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// yamlCases are documents on both sides of the fast path's edge.
var yamlCases = append(longKeyCases(), []string{
	kubectlList,
	buildFixture,
	// Plain scalars as YAML 1.1 (go-yaml v2) reads them.
	"a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: true\nh: False\n",
	"a: ~\nb: null\nc:\nd: NULL\n",
	"a: 80\nb: -3\nc: +4\nd: 0755\ne: 0x1F\nf: 1_000\ng: 0b101\nh: -0b11\ni: 0o17\nj: 18446744073709551615\nk: 99999999999999999999\n",
	"a: 1.5\nb: .5\nc: 1e3\nd: .inf\ne: -.Inf\nf: .nan\ng: 1.\nh: -0\ni: 00\n",
	"a: 10.96.0.1\nb: 1.2.3\nc: 1-2\nd: 2001-12-14\ne: 2001-12-14T21:59:43Z\nf: 1:20\ng: -\nh: .x\ni: +\n",
	"a: '80'\nb: \"yes\"\nc: 'it''s'\nd: \"tab\\there \\u00e9 \\\"q\\\" \\\\ \\x41\"\ne: |\n  line 1\n  line 2\nf: >-\n  folded\n  text\n",
	"a: plain text\n  continued\nb: x # comment\n# c: 1\n",
	"a: \"<b>&</b>\"\nb: \"\\u0001\\r\"\nc: ünïcödé\n",
	// Keys.
	"80: a\n", "true: a\n", "~: a\n", "'80': a\n", "1.5: a\n", "? [a]\n: b\n", "? |\n  k\n: v\n",
	// Anchors, aliases, merge keys, tags.
	"a: &x {b: 1}\nc: *x\n",
	"base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n",
	"a: !!str 80\nb: !!int \"3\"\nc: ! 80\nd: !foo x\n",
	// A bare tag after a line break or mark that is not ASCII.
	"\u0085!", "\u2028!", "\u2029!\n", "\ufeff!", "a:\u0085!\n",
	"a: &a [*a, *a]\n",
	// Duplicate keys, and keys that are only equal once read.
	"a: 1\na: 2\n", "a: 1\nb: {c: 1, c: 2}\n", "a: 1\n\"a\": 2\n", "1: a\n01: b\n",
	// Flow style, nesting, empties.
	"a: {b: [1, 2, {c: d}], e: []}\nf: {}\n", "- a\n- - b\n  - c\n", "[]\n", "{}\n", "x\n", "'x'\n", "",
	// Broken.
	"a : b\n", "a: x\u2028b: y\n", "a: x\u0085b: y\n", "- a\n-  b\n", "\x18: x\n",
	"a: [1, 2\n", "a: b: c\n", "\ta: 1\n", "a:\n- b\n c\n", "'unclosed\n",
	// Literal block scalars, which the block path reads.
	"a: |-\n  x\n  y\n", "a: |+\n  x\n\n\nb: 1\n", "a: |\n  x\n\n  y\n", "a: |\n  x  \n   y\n", "a: |\n  x",
	"a:\n  b: |\n    k:{\"x\"} & *y\n    # not a comment\n  c: 1\n", "- a: |\n    x\n- b\n", "a: |\n  x\n   \n",
	"a: |\n    \n  x\n", "a: |1\n  x\n", "a: |2\n    x\n   y\n", "a: |2-\n     x\n", "a: |-2\n   x\n", "a: |\n  x\n y\n",
	"a: |\nb: 1\n", "a: |\n\n  x\n", "a: |\n  x\n\n\n", "a: |+\n  x\n  \n", "a: |0\n  x\n", "a: |--\n  x\n", "a: | x\n",
	"a: |\n  x\tz\n", "a: |\n  \u00e9\u0085\n", "- |\n  x\n",
	// Plain keys and values with quotes, brackets and commas inside, as
	// managedFields' keys are.
	"k:{\"port\":80,\"protocol\":\"TCP\"}: {}\n", "a: b,c\n", "a: x[0]\n", "a: it's\n", "a: {x}y\n", "a: x{y}\n",
	"k:{\"a\": 1}: v\n", "a: x\"y\n",
	// Binary integers, and text that starts as one.
	"a: 0b63cb0f-0001\n", "a: 0b101\n", "a: -0b11\n", "a: 0b+00\n", "a: 0b\n", "a: 0b2\n", "a: -0b\n", "a: 0b1_0\n",
	"a: 935170bb-0001-402b\n", "a: 0b11111111111111111111111111111111111111111111111111111111111111111\n",
	// One indicator each that the block path leaves to the general parser.
	"a: x # comment\n", "# top\na: b\n", "a: &x b\nc: *x\n", "a: !foo x\n", "a: |\n  x\n",
	"a: >\n  x\n", "a: `x`\n", "a: %x\n", "a: @x\n", "a: x\r\n", "a: x\tb\n",
}...)

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// longKeyCases are keys whose colon is just within and just past the
// 1024 characters where YAML's scanner looks for it, plain and quoted,
// in a mapping and in a sequence's item.
func longKeyCases() []string {
	var out []string
	for _, n := range []int{maxSimpleKey - 2, maxSimpleKey, maxSimpleKey + 1} {
		k := strings.Repeat("k", n)
		out = append(out, k+": v\n", k+":\n", "a:\n- "+k+": v\n", `"`+k[2:]+`": v`+"\n", k[1:]+"é: v\n")
	}
	return out
}

// TestFastYAMLToJSONAgreesWithSigsYAML: whatever the fast path converts,
// sigs.k8s.io/yaml converts to the same value; and what it leaves gets
// that library's result or error, word for word.
func TestFastYAMLToJSONAgreesWithSigsYAML(t *testing.T) {
	for _, doc := range yamlCases {
		want, wantErr := yaml.YAMLToJSONStrict([]byte(doc))
		block, blockErr := blockJSON([]byte(doc))
		if blockErr == nil && (wantErr != nil || !sameJSON(t, block, want)) {
			t.Errorf("%q: block path gave %s; sigs.k8s.io/yaml %s, %v", doc, block, want, wantErr)
		}
		fast, fastErr := fastJSON([]byte(doc))
		switch {
		case fastErr != nil && !errors.Is(fastErr, errSlowPath):
			t.Errorf("%q: the fast path reported its own error: %v", doc, fastErr)
		case fastErr == nil && wantErr != nil:
			t.Errorf("%q: fast path gave %s, sigs.k8s.io/yaml: %v", doc, fast, wantErr)
		case fastErr == nil && !sameJSON(t, fast, want):
			t.Errorf("%q: fast path gave %s, sigs.k8s.io/yaml %s", doc, fast, want)
		}
		got, gotErr := yamlJSON([]byte(doc), 1)
		switch {
		case (gotErr == nil) != (wantErr == nil):
			t.Errorf("%q: yamlToJSON: %s, %v; sigs.k8s.io/yaml: %s, %v", doc, got, gotErr, want, wantErr)
		case gotErr != nil && gotErr.Error() != flatten(wantErr.Error()):
			t.Errorf("%q: yamlToJSON error %q, want %q", doc, gotErr, wantErr)
		case gotErr == nil && !sameJSON(t, got, want):
			t.Errorf("%q: yamlToJSON gave %s, want %s", doc, got, want)
		}
	}
}

// flatten is yamlToJSON's one-line spelling of a multi-line error
// (documents here start on line 1, so line numbers stay).
func flatten(msg string) string {
	var lines [][]byte
	for _, l := range bytes.Split([]byte(msg), []byte("\n")) {
		lines = append(lines, bytes.TrimSpace(l))
	}
	return string(bytes.Join(lines, []byte(" ")))
}

// FuzzYAMLToJSON: the fast path agrees with sigs.k8s.io/yaml on every input
// it takes.
func FuzzYAMLToJSON(f *testing.F) {
	for _, doc := range yamlCases {
		f.Add([]byte(doc))
	}
	f.Add(nestedAliasBomb(1000, 5, 10))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a, *a]\nc: {<<: *b, d: *b}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		if _, err := utf8Text(doc); err != nil || !utf8.Valid(doc) {
			return // Decode refuses it before any conversion
		}
		checkExpansion(t, doc)
		for _, conv := range []func([]byte) ([]byte, error){blockJSON, fastJSON} {
			fast, err := conv(doc)
			if err != nil {
				continue
			}
			want, wantErr := yaml.YAMLToJSONStrict(doc)
			if wantErr != nil {
				t.Fatalf("%q: fast path gave %s, sigs.k8s.io/yaml: %v", doc, fast, wantErr)
			}
			if !sameJSON(t, fast, want) {
				t.Fatalf("%q: fast path gave %s, sigs.k8s.io/yaml %s", doc, fast, want)
			}
		}
	})
}

// checkExpansion: whatever a document's aliases expand it to, the JSON
// that yamlToJSON makes of it is within the expansion limit, give or take
// JSON's escapes (a control character is 6 bytes: \u0001).
func checkExpansion(t *testing.T, doc []byte) {
	out, err := yamlJSON(doc, 1)
	limit := max(inputlimit.ExpansionRatio*int64(len(doc)), inputlimit.ExpansionFloor)
	if err == nil && int64(len(out)) > 6*limit {
		t.Fatalf("%.200q: %d bytes of YAML gave %d bytes of JSON, over 6 times its limit of %d", doc, len(doc), len(out), limit)
	}
}

// resolveNumericLong is resolveNumeric without mayBeNumber's shortcut.
func resolveNumericLong(s string) (plainKind, string) {
	if looksLikeTimestamp(s) {
		return plainOther, ""
	}
	return parseNumeric(strings.ReplaceAll(s, "_", ""))
}

// TestMayBeNumberIsAShortcut: resolveNumeric resolves every text as it
// does without the shortcut, over IP addresses and random texts of the
// characters numbers, IPs and base prefixes are made of.
func TestMayBeNumberIsAShortcut(t *testing.T) {
	texts := []string{"10.0.0.1", "10.128.0.255", "1.2.0b", "0b:1", "0x1F", "0o17", "1_000", "1.5e3", "1.2.3", "-0b1", "fd00::1", "2026-01-02", "1e", "0b.", "+.5"}
	const alphabet = "0123456789.+-_xXoObBeEfF:aZ "
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	for _, s := range texts {
		gotKind, got := resolveNumeric(s)
		wantKind, want := resolveNumericLong(s)
		if gotKind != wantKind || got != want {
			t.Fatalf("%q: %v %q, without the shortcut %v %q", s, gotKind, got, wantKind, want)
		}
	}
}
