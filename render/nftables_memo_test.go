package render_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestNFTablesRendererMatchesNFTables holds the memoizing renderer to
// NFTables over a series of tables and settings, each step changing what
// some ports render: the two must print the same table every time.
func TestNFTablesRendererMatchesNFTables(t *testing.T) {
	m := newMemoTables()
	compact := m.cfg
	compact.NFTablesLayout = render.NFTablesLayoutCompact
	masqAll := m.cfg
	masqAll.MasqueradeAll = true
	steps := append(m.steps(),
		memoStep{"masquerade all", m.otherNode, masqAll},
		memoStep{"compact layout", m.otherNode, compact},
		memoStep{"compact, again", m.otherNode, compact},
		memoStep{"compact, endpoint changed", synthetic.WithOneEndpointChanged(m.otherNode, 40, 2), compact},
		memoStep{"compact, ports removed", m.fewer, compact},
		memoStep{"kube-proxy layout again", m.otherNode, m.cfg})
	var r render.NFTablesRenderer
	checkMemoSteps(t, steps,
		func(t *nodetable.ServiceTable, cfg render.Config) string { return r.Render(t, cfg).String() },
		func(t *nodetable.ServiceTable, cfg render.Config) string { return render.NFTables(t, cfg).String() })
}

// TestNFTablesRendererReusesUnchangedPorts checks that an unchanged port's
// chains are taken over, not written again, and a changed port's are new.
func TestNFTablesRendererReusesUnchangedPorts(t *testing.T) {
	base := synthetic.Table(50, 3)
	cfg := render.DefaultConfig()
	var r render.NFTablesRenderer
	before := r.Render(base, cfg)
	after := r.Render(synthetic.WithOneEndpointChanged(base, 20, 1), withLinkLocal(cfg))
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
	// An endpoint change leaves the Service addresses as they were: the
	// sorted set is taken over, not sorted again.
	for _, name := range []string{"cluster-ips", "service-ips"} {
		if !sameElements(before.Set(name), after.Set(name)) {
			t.Errorf("set %s was sorted again", name)
		}
	}
}

// TestNFTablesRendererReusesUnchangedMaps checks that in the compact
// layout an endpoint change builds only its own endpoint map anew: the
// others keep the last render's elements, the same slice.
func TestNFTablesRendererReusesUnchangedMaps(t *testing.T) {
	base := synthetic.Table(2000, 3)
	cfg := render.DefaultConfig()
	cfg.NFTablesLayout = render.NFTablesLayoutCompact
	var r render.NFTablesRenderer
	before := r.Render(base, cfg)
	after := r.Render(synthetic.WithOneEndpointChanged(base, 20, 1), cfg)
	var renewed []string
	maps := 0
	for _, s := range after.Sets {
		if !strings.HasPrefix(s.Name, "endpoint-addresses-") {
			continue
		}
		maps++
		if !sameElements(before.Set(s.Name), s) {
			renewed = append(renewed, s.Name)
		}
	}
	if maps < 200 || len(renewed) != 1 {
		t.Errorf("of %d endpoint maps, %d were built anew (%v...); want one", maps, len(renewed), renewed[:min(3, len(renewed))])
	}
}

// sameElements reports whether two sets hold the very same elements slice.
func sameElements(a, b *nft.Set) bool {
	return a != nil && b != nil && len(a.Elements) > 0 && len(a.Elements) == len(b.Elements) &&
		&a.Elements[0] == &b.Elements[0]
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

// memoTables are the tables the memo tests render in turn, each step
// changing what some ports render, with the configuration they start
// with.
type memoTables struct {
	base, changed, fewer, nodePort, otherNode *nodetable.ServiceTable
	cfg                                       render.Config
}

// newMemoTables: one endpoint moved, then two ports gone, then a NodePort
// set, then the node's IP moved into the load balancers' source ranges
// (whose KUBE-FW chains then let the node's own traffic through).
func newMemoTables() memoTables {
	m := memoTables{base: synthetic.VariedTable(300, 3), cfg: render.DefaultConfig()}
	m.base.Node = nodetable.Node{Name: "node1", IPs: []netip.Addr{netip.MustParseAddr("172.18.0.2")}}
	m.cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	m.changed = synthetic.WithOneEndpointChanged(m.base, 150, 1)
	fewer := *m.changed
	fewer.Ports = slices.Delete(slices.Clone(m.changed.Ports), 10, 12)
	nodePort := fewer
	nodePort.Ports = slices.Clone(fewer.Ports)
	nodePort.Ports[20].NodePort = 30999
	otherNode := nodePort
	otherNode.Node.IPs = []netip.Addr{netip.MustParseAddr("203.0.113.7")}
	m.fewer, m.nodePort, m.otherNode = &fewer, &nodePort, &otherNode
	return m
}

// steps are the memo tests' common steps, in order. The last two set
// NodePort addresses and then take the loopback address off the host,
// which moves iptables' localhost NodePorts and nftables' nodeport-ips.
func (m memoTables) steps() []memoStep {
	hosts := m.cfg
	hosts.NodePortAddresses = []string{"127.0.0.0/8", "203.0.113.0/24"}
	hosts.HostAddresses = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("203.0.113.7")}
	noLoopback := hosts
	noLoopback.HostAddresses = hosts.HostAddresses[1:]
	return []memoStep{
		{"first", m.base, m.cfg},
		{"again", m.base, m.cfg},
		{"endpoint changed", m.changed, m.cfg},
		{"ports removed", m.fewer, m.cfg},
		{"nodePort set", m.nodePort, m.cfg},
		{"node IP changed", m.otherNode, m.cfg},
		{"NodePort addresses", m.otherNode, hosts},
		{"loopback gone", m.otherNode, noLoopback},
	}
}

// withLinkLocal is cfg with one more host address, as a new pod's veth
// adds: the memos must still take unchanged ports over.
func withLinkLocal(cfg render.Config) render.Config {
	cfg.HostAddresses = append(slices.Clone(cfg.HostAddresses), netip.MustParseAddr("fe80::1"))
	return cfg
}

// memoStep is one render of a memo test.
type memoStep struct {
	name  string
	table *nodetable.ServiceTable
	cfg   render.Config
}

// checkMemoSteps renders each step with a memoizing renderer (memo) and
// from nothing (whole): the two texts must be the same every time.
func checkMemoSteps(t *testing.T, steps []memoStep, memo, whole func(*nodetable.ServiceTable, render.Config) string) {
	t.Helper()
	for _, step := range steps {
		if got, want := memo(step.table, step.cfg), whole(step.table, step.cfg); got != want {
			t.Fatalf("%s: the memoizing renderer's output differs:\n%s", step.name, firstDiff(want, got))
		}
	}
}
