package nftables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// tableCase is one rendered table: a golden case's nftables section (one
// table per family) or a table kube-proxy v1.37.2 itself programmed.
type tableCase struct {
	name string
	rs   *nft.Ruleset
}

// tableCases returns every table of the golden files and of the reference
// dumps under testdata/reference.
func tableCases(t testing.TB) []tableCase {
	t.Helper()
	var out []tableCase
	golden, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "*.txtar"))
	for _, path := range golden {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			// The compact layout's cases are named "<case>-compact".
			if name, ok := strings.CutPrefix(f.Name, "nftables"); ok && (name == "" || name == "-compact") {
				out = append(out, parseCase(t, strings.TrimSuffix(filepath.Base(path), ".txtar")+name, f.Data)...)
			}
		}
	}
	refs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "reference", "*", "nftables.rules"))
	for _, path := range refs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseCase(t, "reference-"+filepath.Base(filepath.Dir(path)), data)...)
	}
	if len(golden) < 10 || len(refs) < 3 {
		t.Fatalf("found %d golden files and %d reference dumps; run from the package directory", len(golden), len(refs))
	}
	return out
}

func parseCase(t testing.TB, name string, data []byte) []tableCase {
	t.Helper()
	sets, err := nft.ParseAll(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := make([]tableCase, len(sets))
	for i, rs := range sets {
		out[i] = tableCase{name: name + "/" + string(rs.Family), rs: rs}
	}
	return out
}

// eachCompiledRule calls fn with every rule of every table case, compiled
// for its table's family; a rule that does not compile fails the test.
func eachCompiledRule(t testing.TB, fn func(tc tableCase, fam byte, r nft.Rule, cr *compiledRule)) {
	t.Helper()
	for _, tc := range tableCases(t) {
		fam, _ := familyNumber(tc.rs.Family)
		for _, ch := range tc.rs.Chains {
			for _, r := range ch.Rules {
				cr, err := compileRule(fam, string(r))
				if err != nil {
					t.Fatalf("%s: compile %q: %v", tc.name, r, err)
				}
				fn(tc, fam, r, cr)
			}
		}
	}
}
