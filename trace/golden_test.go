package trace_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/goldencase"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// scenario is a golden scenario (test/goldencase) with its tables.
type scenario struct {
	*goldencase.Case
	tables *nodetable.Tables
}

// loadScenarios reads every testdata/golden/*.txtar and builds its tables.
func loadScenarios(t testing.TB) []*scenario {
	t.Helper()
	var out []*scenario
	for _, c := range goldencase.Load(t, filepath.Join("..", "testdata", "golden")) {
		out = append(out, &scenario{Case: c, tables: c.Tables(t, c.Input)})
	}
	return out
}

// node is the scenario's node in family f, as the CLI describes it.
func (sc *scenario) node(f nodetable.Family) (*nodetable.ServiceTable, *trace.Node) {
	tab := sc.tables.ForFamily(f)
	o := trace.NodeOptions{HostAddresses: sc.Cfg.HostAddresses, ClusterCIDRs: sc.Cfg.ClusterCIDRs}
	switch sc.Cfg.DetectLocalMode {
	case render.LocalModeBridgeInterface:
		o.PodInterface = sc.Cfg.BridgeInterface
	case render.LocalModeInterfaceNamePrefix:
		o.PodInterface = sc.Cfg.InterfaceNamePrefix + "0"
	}
	return tab, trace.NodeOf(tab, o)
}

// goldenText is what the golden file holds for one mode: per family, the
// service view of every Service port, then a full trace from the first
// source class to each ClusterIP, and one to an address no rule knows.
func goldenText(t *testing.T, sc *scenario, mode string) string {
	var b strings.Builder
	for _, fs := range sc.Cfg.Families {
		f := nodetable.Family(fs)
		tab, n := sc.node(f)
		ev, n := evaluator(t, mode, tab, sc.Cfg.Config, n)
		b.WriteString("## " + fs + " service view\n")
		var cells []trace.Cell
		for i := range tab.Ports {
			c, err := trace.ServiceView(ev, n, &tab.Ports[i])
			if err != nil {
				t.Fatalf("%s %s: %v", sc.Name, mode, err)
			}
			cells = append(cells, c...)
		}
		b.WriteString(trace.ServiceTable(cells))
		for i := range tab.Ports {
			sp := &tab.Ports[i]
			src := trace.Sources(n, sp)[0]
			p := trace.Packet{Src: src.Address, Dst: sp.ClusterIP, Port: uint16(sp.Port), Protocol: sp.Name.Protocol.Lower()}
			b.WriteString("## " + fs + " trace " + sp.Name.String() + " from " + src.Class + "\n")
			b.WriteString(runTrace(t, ev, n, p))
		}
		stray := netip.MustParseAddr("192.0.2.250")
		if f == nodetable.IPv6 {
			stray = netip.MustParseAddr("2001:db8::250")
		}
		b.WriteString("## " + fs + " trace to an address no rule knows\n")
		b.WriteString(runTrace(t, ev, n, trace.Packet{Src: n.Addresses[0], Dst: stray, Port: 80, Protocol: "tcp"}))
	}
	return b.String()
}

func runTrace(t *testing.T, ev trace.Evaluator, n *trace.Node, p trace.Packet) string {
	r, err := trace.Run(ev, n, p, n.Infer(p.Src))
	if err != nil {
		t.Fatal(err)
	}
	return r.Text()
}

func TestGolden(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "golden", "trace", sc.Name+".txtar")
			a := &txtar.Archive{Comment: []byte("trace and the service view of scenario " + sc.Name + " (testdata/golden/" + sc.Name + ".txtar)\n")}
			if old, err := txtar.ParseFile(path); err == nil {
				a = old
			}
			for _, mode := range goldenModes {
				got := goldenText(t, sc, mode)
				checkSection(t, path, a, mode, got)
			}
			if *golden.Update {
				if err := os.WriteFile(path, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func checkSection(t *testing.T, path string, a *txtar.Archive, name, got string) {
	for i, f := range a.Files {
		if f.Name != name {
			continue
		}
		if *golden.Update {
			a.Files[i].Data = []byte(got)
		} else if want := string(f.Data); want != got {
			t.Errorf("%s: %s differs (-want +got):\n%s", path, name, cmp.Diff(want, got))
		}
		return
	}
	if !*golden.Update {
		t.Fatalf("%s: no %q section; run go test ./trace -update", path, name)
	}
	a.Files = append(a.Files, txtar.File{Name: name, Data: []byte(got)})
}
