package render_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// goldenRuleset is what every mode's ruleset type offers the golden tests.
type goldenRuleset[R any] interface {
	Equal(R) bool
	String() string
}

// goldenMode is one mode's section of the golden files: how to render a
// family, and the mode's text form.
type goldenMode[R goldenRuleset[R]] struct {
	section  string
	render   func(t *nodetable.ServiceTable, cfg render.Config) R
	encode   func(io.Writer, []R) error
	parse    func([]byte) ([]R, error)
	validate func(R) error // optional
}

var (
	iptablesGolden = goldenMode[*ipt.Ruleset]{
		section: "iptables", render: render.IPTables, encode: ipt.EncodeAll, parse: ipt.ParseAll,
	}
	nftablesGolden = goldenMode[*nft.Ruleset]{
		section: "nftables", render: render.NFTables, encode: nft.EncodeAll, parse: nft.ParseAll,
		validate: (*nft.Ruleset).Validate,
	}
	// nftablesCompactGolden is the opt-in compact layout: the same
	// tables as the nftables section but for the numgen maps.
	nftablesCompactGolden = goldenMode[*nft.Ruleset]{
		section: "nftables-compact", encode: nft.EncodeAll, parse: nft.ParseAll,
		validate: (*nft.Ruleset).Validate,
		render: func(t *nodetable.ServiceTable, cfg render.Config) *nft.Ruleset {
			cfg.NFTablesLayout = render.NFTablesLayoutCompact
			return render.NFTables(t, cfg)
		},
	}
	ipvsGolden = goldenMode[*ipvs.Ruleset]{
		section: "ipvs", encode: ipvs.EncodeAll, parse: ipvs.ParseAll,
		render: func(t *nodetable.ServiceTable, cfg render.Config) *ipvs.Ruleset {
			return render.IPVS(t, cfg, render.IPVSOptions{})
		},
	}
	// userspaceGolden uses the default options: the proxy on every
	// interface, the default port range.
	userspaceGolden = goldenMode[*userspace.Ruleset]{
		section: "userspace", encode: userspace.EncodeAll, parse: userspace.ParseAll,
		render: func(t *nodetable.ServiceTable, cfg render.Config) *userspace.Ruleset {
			return render.Userspace(t, cfg, render.UserspaceOptions{})
		},
	}
)

func TestGoldenIPTables(t *testing.T)        { runGolden(t, iptablesGolden) }
func TestGoldenNFTables(t *testing.T)        { runGolden(t, nftablesGolden) }
func TestGoldenNFTablesCompact(t *testing.T) { runGolden(t, nftablesCompactGolden) }
func TestGoldenIPVS(t *testing.T)            { runGolden(t, ipvsGolden) }
func TestGoldenUserspace(t *testing.T)       { runGolden(t, userspaceGolden) }

// renderCase renders every family of a case and its text form.
func (m goldenMode[R]) renderCase(t *testing.T, gc *goldenCase, input []byte) ([]R, string) {
	t.Helper()
	tables := gc.Tables(t, input)
	var sets []R
	for _, f := range gc.Families() {
		sets = append(sets, m.render(tables.ForFamily(f), gc.Cfg.Config))
	}
	var b bytes.Buffer
	if err := m.encode(&b, sets); err != nil {
		t.Fatal(err)
	}
	return sets, b.String()
}

// runGolden checks the mode's section of every golden case (rewritten with
// -update), that the render does not depend on input order, that it is
// valid, and that the text and JSON forms read back into the same value.
func runGolden[R goldenRuleset[R]](t *testing.T, m goldenMode[R]) {
	for _, gc := range loadGoldenCases(t) {
		t.Run(gc.Name, func(t *testing.T) {
			sets, got := m.renderCase(t, gc, gc.Input)
			gc.check(t, m.section, got)
			if _, again := m.renderCase(t, gc, reverseDocuments(gc.Input)); again != got {
				t.Errorf("rendering depends on input order:\n%s", cmp.Diff(got, again))
			}
			for _, rs := range sets {
				if m.validate != nil {
					if err := m.validate(rs); err != nil {
						t.Error(err)
					}
				}
			}
			back, err := m.parse([]byte(got))
			if err != nil {
				t.Fatalf("parse rendered text: %v", err)
			}
			assertSame(t, "text round trip", sets, back)
			data, err := json.Marshal(sets)
			if err != nil {
				t.Fatal(err)
			}
			var fromJSON []R
			if err := json.Unmarshal(data, &fromJSON); err != nil {
				t.Fatal(err)
			}
			assertSame(t, "JSON round trip", sets, fromJSON)
		})
	}
}

func assertSame[R goldenRuleset[R]](t *testing.T, what string, want, got []R) {
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
