package render_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// renderUserspace renders every family of the case in the userspace text
// form, with the default options (proxy on every interface, default range).
func (gc *goldenCase) renderUserspace(t *testing.T, input []byte) ([]*userspace.Ruleset, string) {
	t.Helper()
	tables := gc.tables(t, input)
	var sets []*userspace.Ruleset
	for _, f := range gc.families() {
		sets = append(sets, render.Userspace(tables.ForFamily(f), gc.cfg.Config, render.UserspaceOptions{}))
	}
	var b bytes.Buffer
	if err := userspace.EncodeAll(&b, sets); err != nil {
		t.Fatal(err)
	}
	return sets, b.String()
}

// TestGoldenUserspace checks the "userspace" section of every golden case
// (rewritten with -update), that the render does not depend on input
// order, and that the text and JSON forms read back unchanged.
func TestGoldenUserspace(t *testing.T) {
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			sets, got := gc.renderUserspace(t, gc.input)
			gc.check(t, "userspace", got)
			if _, again := gc.renderUserspace(t, reverseDocuments(gc.input)); again != got {
				t.Errorf("rendering depends on input order:\n%s", cmp.Diff(got, again))
			}
			back, err := userspace.ParseAll([]byte(got))
			if err != nil {
				t.Fatalf("parse rendered text: %v", err)
			}
			assertSameUserspace(t, "text round trip", sets, back)
			data, err := json.Marshal(sets)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON []*userspace.Ruleset
			if err := json.Unmarshal(data, &fromJSON); err != nil {
				t.Fatal(err)
			}
			assertSameUserspace(t, "JSON round trip", sets, fromJSON)
		})
	}
}

func assertSameUserspace(t *testing.T, what string, want, got []*userspace.Ruleset) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d rulesets, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !want[i].Equal(got[i]) {
			t.Errorf("%s: ruleset %d differs:\n%s", what, i, cmp.Diff(want[i].String(), got[i].String()))
		}
	}
}
