package render_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// TestNFTablesRendererMatchesNFTables holds the memoizing renderer to
// NFTables over a series of tables and settings, each step changing what
// some ports render: the two must print the same table every time.
func TestNFTablesRendererMatchesNFTables(t *testing.T) {
	base := synthetic.VariedTable(300, 3)
	base.Node = nodetable.Node{Name: "node1", IPs: []netip.Addr{netip.MustParseAddr("172.18.0.2")}}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	compact := cfg
	compact.NFTablesLayout = render.NFTablesLayoutCompact
	masqAll := cfg
	masqAll.MasqueradeAll = true

	changed := synthetic.WithOneEndpointChanged(base, 150, 1)
	fewer := *changed
	fewer.Ports = slices.Delete(slices.Clone(changed.Ports), 10, 12)
	nodePort := fewer
	nodePort.Ports = slices.Clone(fewer.Ports)
	nodePort.Ports[20].NodePort = 30999
	otherNode := nodePort
	otherNode.Node.IPs = []netip.Addr{netip.MustParseAddr("172.18.0.3")}

	var r render.NFTablesRenderer
	for _, step := range []struct {
		name  string
		table *nodetable.ServiceTable
		cfg   render.Config
	}{
		{"first", base, cfg},
		{"again", base, cfg},
		{"endpoint changed", changed, cfg},
		{"ports removed", &fewer, cfg},
		{"nodePort set", &nodePort, cfg},
		{"node IP changed", &otherNode, cfg},
		{"masquerade all", &otherNode, masqAll},
		{"compact layout", &otherNode, compact},
		{"kube-proxy layout again", &otherNode, cfg},
	} {
		got, want := r.Render(step.table, step.cfg).String(), render.NFTables(step.table, step.cfg).String()
		if got != want {
			t.Fatalf("%s: the renderer's table differs from NFTables':\n%s", step.name, firstDiff(want, got))
		}
	}
}

// TestNFTablesRendererReusesUnchangedPorts checks that an unchanged port's
// chains are taken over, not written again, and a changed port's are new.
func TestNFTablesRendererReusesUnchangedPorts(t *testing.T) {
	base := synthetic.Table(50, 3)
	cfg := render.DefaultConfig()
	var r render.NFTablesRenderer
	before := r.Render(base, cfg)
	after := r.Render(synthetic.WithOneEndpointChanged(base, 20, 1), cfg)
	reused, renewed := 0, 0
	for _, c := range after.Chains {
		i := slices.IndexFunc(before.Chains, func(b *nft.Chain) bool { return b.Name == c.Name })
		if i >= 0 && before.Chains[i] == c {
			reused++
		} else {
			renewed++
		}
	}
	// The skeleton's chains and the changed port's are written anew.
	if reused == 0 || renewed > len(before.Chains)/2 {
		t.Errorf("%d chains reused, %d written anew of %d", reused, renewed, len(after.Chains))
	}
}

// TestSamePortSeesEveryField changes each field of a ServicePort in turn:
// the memo must never take a changed port for the same one.
func TestSamePortSeesEveryField(t *testing.T) {
	sp := synthetic.VariedTable(8, 2).Ports[3]
	v := reflect.ValueOf(&sp).Elem()
	for i := range v.NumField() {
		changed := sp
		f := reflect.ValueOf(&changed).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.AppendSlice(reflect.MakeSlice(f.Type(), 0, f.Len()+1), f))
			f.Set(reflect.Append(f, reflect.Zero(f.Type().Elem())))
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int32:
			f.SetInt(f.Int() + 1)
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[netip.Addr]() {
				f.Set(reflect.ValueOf(netip.MustParseAddr("10.99.99.99")))
			} else {
				f.Set(reflect.ValueOf(nodetable.ServicePortName{Name: "other"}))
			}
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
		if render.SamePort(&sp, &changed) {
			t.Errorf("field %s changed, but the memo takes the port for the same", v.Type().Field(i).Name)
		}
	}
	if same := sp; !render.SamePort(&sp, &same) {
		t.Error("a copy of a port is not the same port")
	}
}

// firstDiff shows the first line where two listings differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("lengths differ: want %d lines, got %d", len(w), len(g))
}
