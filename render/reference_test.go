package render_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// referenceConfig is the configuration the reference kube-proxy ran with
// (see testdata/reference/*/iptables.meta).
func referenceConfig() render.Config {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}
	return cfg
}

// TestIPTablesMatchesKubeProxy renders each reference scenario and compares
// it, chain by chain, with what the real kube-proxy v1.37.2 programmed.
func TestIPTablesMatchesKubeProxy(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "testdata", "reference", "*"))
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			saved, err := os.ReadFile(filepath.Join(dir, "iptables.rules"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := ipt.Parse(saved, nodetable.IPv4)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := cluster.Decode("scenario.yaml", input)
			if err != nil {
				t.Fatal(err)
			}
			tables, _, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
			if err != nil {
				t.Fatal(err)
			}
			got := render.IPTables(tables.IPv4, referenceConfig())
			compareWithKernelDump(t, want, got)
		})
	}
	if n < 3 {
		t.Fatalf("found %d reference scenarios, want at least 3", n)
	}
}

// compareWithKernelDump checks that every chain of the kernel dump (minus
// kube-proxy's canary chains and built-in policies) holds exactly the rules
// rendered, and that nothing rendered is missing from the dump.
func compareWithKernelDump(t *testing.T, dump, rendered *ipt.Ruleset) {
	t.Helper()
	for _, want := range rendered.Tables {
		have := dump.Table(want.Name)
		if have == nil {
			t.Errorf("table %s missing from the kernel dump", want.Name)
			continue
		}
		for _, c := range have.Chains {
			if c.Name == "KUBE-PROXY-CANARY" {
				continue
			}
			r := want.Chain(c.Name)
			if r == nil {
				if len(c.Rules) > 0 || !ipt.IsBuiltin(want.Name, c.Name) {
					t.Errorf("%s/%s: in kube-proxy's dump but not rendered", want.Name, c.Name)
				}
				continue
			}
			if diff := cmp.Diff(c.Rules, r.Rules); diff != "" {
				t.Errorf("%s/%s differs from kube-proxy (-kube-proxy +rendered):\n%s", want.Name, c.Name, diff)
			}
		}
		for _, c := range want.Chains {
			if have.Chain(c.Name) == nil {
				t.Errorf("%s/%s: rendered but not in kube-proxy's dump", want.Name, c.Name)
			}
		}
	}
}
