package render_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// renderIPVS renders every family of the case in the ipvs text form.
func (gc *goldenCase) renderIPVS(t *testing.T, input []byte) ([]*ipvs.Ruleset, string) {
	t.Helper()
	tables := gc.tables(t, input)
	var sets []*ipvs.Ruleset
	for _, f := range gc.families() {
		sets = append(sets, render.IPVS(tables.ForFamily(f), gc.cfg.Config, render.IPVSOptions{}))
	}
	var b bytes.Buffer
	if err := ipvs.EncodeAll(&b, sets); err != nil {
		t.Fatal(err)
	}
	return sets, b.String()
}

// TestGoldenIPVS checks the "ipvs" section of every golden case (rewritten
// with -update), that the render does not depend on input order, and that
// the text and JSON forms read back unchanged.
func TestGoldenIPVS(t *testing.T) {
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			sets, got := gc.renderIPVS(t, gc.input)
			gc.check(t, "ipvs", got)
			if _, again := gc.renderIPVS(t, reverseDocuments(gc.input)); again != got {
				t.Errorf("rendering depends on input order:\n%s", cmp.Diff(got, again))
			}
			back, err := ipvs.ParseAll([]byte(got))
			if err != nil {
				t.Fatalf("parse rendered text: %v", err)
			}
			assertSameIPVS(t, "text round trip", sets, back)
			data, err := json.Marshal(sets)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON []*ipvs.Ruleset
			if err := json.Unmarshal(data, &fromJSON); err != nil {
				t.Fatal(err)
			}
			assertSameIPVS(t, "JSON round trip", sets, fromJSON)
		})
	}
}

func assertSameIPVS(t *testing.T, what string, want, got []*ipvs.Ruleset) {
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
