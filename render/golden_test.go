package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// caseConfig is a golden case's config.yaml: the node and the proxy flags.
type caseConfig struct {
	NodeName     string   `json:"nodeName"`
	NodeIPs      []string `json:"nodeIPs"`
	Families     []string `json:"families"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	render.Config
}

// goldenCase is one parsed testdata/golden/<name>.txtar.
type goldenCase struct {
	name    string
	path    string
	archive *txtar.Archive
	input   []byte
	cfg     caseConfig
}

func loadGoldenCases(t *testing.T) []*goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "golden", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases found: %v", err)
	}
	var cases []*goldenCase
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		gc := &goldenCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar"), path: p, archive: a}
		gc.cfg.Config = render.DefaultConfig()
		gc.cfg.Families = []string{"IPv4"}
		for _, f := range a.Files {
			switch f.Name {
			case "input.yaml":
				gc.input = f.Data
			case "config.yaml":
				if err := yaml.UnmarshalStrict(f.Data, &gc.cfg); err != nil {
					t.Fatalf("%s: config.yaml: %v", p, err)
				}
			}
		}
		if gc.input == nil {
			t.Fatalf("%s: no input.yaml section", p)
		}
		cases = append(cases, gc)
	}
	return cases
}

// tables decodes the case's input and builds its node-local tables.
func (gc *goldenCase) tables(t *testing.T, input []byte) *nodetable.Tables {
	t.Helper()
	snap, err := cluster.Decode(gc.name+"/input.yaml", input)
	if err != nil {
		t.Fatal(err)
	}
	cc := cluster.Config{NodeName: gc.cfg.NodeName}
	if cc.NodeName == "" {
		cc.NodeName = "node1"
	}
	for _, s := range gc.cfg.NodeIPs {
		cc.NodeIPs = append(cc.NodeIPs, mustAddr(t, s))
	}
	for _, s := range gc.cfg.ServiceCIDRs {
		cc.ServiceCIDRs = append(cc.ServiceCIDRs, mustPrefix(t, s))
	}
	tables, _, err := cluster.Build(snap, cc)
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

func (gc *goldenCase) families() []nodetable.Family {
	var out []nodetable.Family
	for _, f := range gc.cfg.Families {
		out = append(out, nodetable.Family(f))
	}
	return out
}

// renderIPTables renders every family of the case as iptables-save text.
func (gc *goldenCase) renderIPTables(t *testing.T, input []byte) ([]*ipt.Ruleset, string) {
	return iptablesGolden.renderCase(t, gc, input)
}

// section returns the named section of the archive, or "" and false.
func (gc *goldenCase) section(name string) (string, bool) {
	for _, f := range gc.archive.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// check compares got with the named section, or rewrites it with -update.
func (gc *goldenCase) check(t *testing.T, name, got string) {
	t.Helper()
	if *golden.Update {
		i := slices.IndexFunc(gc.archive.Files, func(f txtar.File) bool { return f.Name == name })
		if i < 0 {
			gc.archive.Files = append(gc.archive.Files, txtar.File{Name: name})
			i = len(gc.archive.Files) - 1
		}
		gc.archive.Files[i].Data = []byte(got)
		if err := os.WriteFile(gc.path, txtar.Format(gc.archive), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := gc.section(name)
	if !ok {
		t.Fatalf("%s: no %q section; run go test ./render -update", gc.path, name)
	}
	if want != got {
		t.Errorf("%s: %s differs from the golden file (-want +got):\n%s", gc.path, name, cmp.Diff(want, got))
	}
}

// reverseDocuments reverses the order of the "---"-separated YAML documents.
func reverseDocuments(in []byte) []byte {
	docs := bytes.Split(in, []byte("\n---\n"))
	slices.Reverse(docs)
	return bytes.Join(docs, []byte("\n---\n"))
}
