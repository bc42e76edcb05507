// Package goldencase loads the golden scenarios under testdata/golden, for
// the tests that render them (render) and trace them (trace): each
// scenario's input snapshot, its config.yaml, and the node-local tables
// built from them.
package goldencase

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// Config is a scenario's config.yaml: the node and the proxy flags.
type Config struct {
	NodeName     string   `json:"nodeName"`
	NodeIPs      []string `json:"nodeIPs"`
	Families     []string `json:"families"`
	ServiceCIDRs []string `json:"serviceCIDRs"`
	render.Config
}

// Case is one parsed testdata/golden/<name>.txtar.
type Case struct {
	Name    string
	Path    string
	Archive *txtar.Archive
	Input   []byte
	Cfg     Config
}

// Load reads every *.txtar under dir (testdata/golden, as seen from the
// test's package).
func Load(t testing.TB, dir string) []*Case {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases found in %s: %v", dir, err)
	}
	var cases []*Case
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		gc := &Case{Name: strings.TrimSuffix(filepath.Base(p), ".txtar"), Path: p, Archive: a}
		gc.Cfg.Config = render.DefaultConfig()
		gc.Cfg.Families = []string{"IPv4"}
		for _, f := range a.Files {
			switch f.Name {
			case "input.yaml":
				gc.Input = f.Data
			case "config.yaml":
				if err := yaml.UnmarshalStrict(f.Data, &gc.Cfg); err != nil {
					t.Fatalf("%s: config.yaml: %v", p, err)
				}
			}
		}
		if gc.Input == nil {
			t.Fatalf("%s: no input.yaml section", p)
		}
		cases = append(cases, gc)
	}
	return cases
}

// Tables decodes input (the case's, or a variant of it) and builds the
// node-local tables of the case's node.
func (gc *Case) Tables(t testing.TB, input []byte) *nodetable.Tables {
	t.Helper()
	snap, err := cluster.Decode(gc.Name+"/input.yaml", input)
	if err != nil {
		t.Fatal(err)
	}
	cc := cluster.Config{NodeName: gc.Cfg.NodeName}
	if cc.NodeName == "" {
		cc.NodeName = "node1"
	}
	for _, s := range gc.Cfg.NodeIPs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatalf("%s: nodeIPs: %v", gc.Name, err)
		}
		cc.NodeIPs = append(cc.NodeIPs, a)
	}
	for _, s := range gc.Cfg.ServiceCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			t.Fatalf("%s: serviceCIDRs: %v", gc.Name, err)
		}
		cc.ServiceCIDRs = append(cc.ServiceCIDRs, p)
	}
	tables, _, err := cluster.Build(snap, cc)
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// Families are the case's IP families.
func (gc *Case) Families() []nodetable.Family {
	var out []nodetable.Family
	for _, f := range gc.Cfg.Families {
		out = append(out, nodetable.Family(f))
	}
	return out
}
