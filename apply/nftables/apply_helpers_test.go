package nftables_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// requireKernel skips (under CI fails) a test that cannot create network
// namespaces or lacks the nft binary, which the tests use as the
// independent reader and writer of the kernel's state.
func requireKernel(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "nft")
}

// node is a lab whose node namespace a Client manages, or an in-memory
// kernel (fake) for the tests of the client's logic.
type node struct {
	lab    *netlab.Lab
	fake   *applynft.FakeKernel
	client *applynft.Client
}

// newFakeNode is a node on a new in-memory kernel; it needs no root.
func newFakeNode(t testing.TB) *node {
	t.Helper()
	k := applynft.NewFakeKernel()
	return &node{fake: k, client: k.Client(render.NFTablesOwnership())}
}

func newNode(t testing.TB) *node {
	t.Helper()
	requireKernel(t)
	lab := netlab.New(t)
	return &node{lab: lab, client: openClient(t, lab.Node())}
}

// openClient opens a Client in ns; it stays there for its whole life.
func openClient(t testing.TB, ns netlab.NS) *applynft.Client {
	t.Helper()
	var client *applynft.Client
	err := ns.Do(func() (err error) {
		client, err = applynft.NewClient(render.NFTablesOwnership())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// nft runs the nft binary in the node with the given stdin (may be empty).
func (n *node) nft(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	if n.fake != nil {
		t.Fatal("the in-memory kernel has no nft")
	}
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	out, err := n.lab.Node().RunInput(context.Background(), in, "nft", args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdin)
	}
	return string(out)
}

// listed is what `nft list table` prints for the table, parsed, or nil
// when there is no such table; on a fake node, the table it holds.
func (n *node) listed(t testing.TB, family nft.Family, table string) *nft.Ruleset {
	t.Helper()
	if n.fake != nil {
		return n.fake.Table(family, table)
	}
	if !strings.Contains(n.nft(t, "", "list", "tables", string(family)), "table "+string(family)+" "+table+"\n") {
		return nil
	}
	for attempt := 1; ; attempt++ {
		rs, err := nft.Parse([]byte(n.nft(t, "", "list", "table", string(family), table)))
		if err != nil {
			t.Fatalf("nft's listing does not parse: %v", err)
		}
		// A listing torn by a hash set's resize is taken again.
		if !rs.HasRepeatedElements() || attempt == 20 {
			return rs
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

func (n *node) plan(t testing.TB, desired ...*nft.Ruleset) []*applynft.Plan {
	t.Helper()
	plans, err := n.client.Plan(context.Background(), desired)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}

// apply plans and applies desired, and returns the plans.
func (n *node) apply(t testing.TB, desired ...*nft.Ruleset) []*applynft.Plan {
	t.Helper()
	plans := n.plan(t, desired...)
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	return plans
}

// assertNoChanges checks that a plan finds nothing to change.
func (n *node) assertNoChanges(t testing.TB, desired ...*nft.Ruleset) {
	t.Helper()
	for _, p := range n.plan(t, desired...) {
		if !p.Changes.Empty() {
			t.Fatalf("plan after apply is not empty:\n%s", planText(t, p))
		}
	}
}

// assertApplied checks that a plan right after finds nothing to change and
// that nft lists each table as rendered, up to the order of sets, chains
// and elements, which means nothing in nft.
func (n *node) assertApplied(t testing.TB, desired ...*nft.Ruleset) {
	t.Helper()
	n.assertNoChanges(t, desired...)
	for _, d := range desired {
		if got, want := canonical(n.listed(t, d.Family, d.Table)), canonical(d); got != want {
			t.Fatalf("nft lists table %s %s differently from the render:\n--- nft\n%s\n--- render\n%s", d.Family, d.Table, got, want)
		}
	}
}

func planText(t testing.TB, p *applynft.Plan) string {
	t.Helper()
	var b strings.Builder
	if err := p.Changes.WriteText(&b, "kernel"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// canonical is a listing with sets and chains sorted by name and elements
// sorted; nft gives those orders no meaning.
func canonical(rs *nft.Ruleset) string {
	if rs == nil {
		return "<no table>"
	}
	c := *rs
	c.Sets = slices.Clone(rs.Sets)
	for i, s := range c.Sets {
		cs := *s
		cs.Elements = slices.Clone(s.Elements)
		cs.SortElements()
		c.Sets[i] = &cs
	}
	c.Chains = slices.Clone(rs.Chains)
	slices.SortFunc(c.Sets, func(a, b *nft.Set) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(c.Chains, func(a, b *nft.Chain) int { return strings.Compare(a.Name, b.Name) })
	return c.String()
}

// goldenCase is the nftables render of one golden file.
type goldenCase struct {
	name   string
	tables []*nft.Ruleset
}

// goldenCases reads the nftables section of every golden file: tables of
// every shape the renderer makes.
func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "golden", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var out []goldenCase
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if f.Name != "nftables" {
				continue
			}
			tables, err := nft.ParseAll(f.Data)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			out = append(out, goldenCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar"), tables: tables})
		}
	}
	return out
}

// benchConfig is the render configuration of the synthetic tables.
func benchConfig() render.Config {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return cfg
}

// syntheticTable is n Services x perService endpoints in which one Service
// in a hundred (24, 124, ...) has ClientIP affinity: endpoint chains and
// dynamic sets. (Each affinity set is declared with size 65535, as nft
// declares it, and costs the kernel about a megabyte of hash buckets, so
// a table full of them is slow to load with any tool.)
func syntheticTable(n, perService int) *nodetable.ServiceTable {
	t := synthetic.Table(n, perService)
	for i := range t.Ports {
		if i%100 == 24 {
			t.Ports[i].AffinityTimeoutSeconds = 10800
		}
	}
	return t
}

// labService is a ClusterIP Service of the lab: web on 10.96.0.10:80 with
// the given pod IPs as endpoints on port 8080, all on this node.
func labTable(ips ...string) *nodetable.ServiceTable {
	t := &nodetable.ServiceTable{
		Family: nodetable.IPv4,
		Node:   nodetable.Node{Name: "node1", IPs: []netip.Addr{netlab.NodeIP}},
	}
	sp := nodetable.ServicePort{
		Name:      nodetable.ServicePortName{Namespace: "default", Name: "web", Port: "http", Protocol: nodetable.TCP},
		ClusterIP: netip.MustParseAddr("10.96.0.10"),
		Port:      80,
	}
	var eps []nodetable.Endpoint
	for _, ip := range ips {
		eps = append(eps, nodetable.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, NodeName: "node1", Local: true, Ready: true, Serving: true})
	}
	synthetic.SetEndpoints(&sp, eps)
	sp.LocalEndpoints = eps
	t.Ports = append(t.Ports, sp)
	return t
}

func labRender(ips ...string) *nft.Ruleset {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	return render.NFTables(labTable(ips...), cfg)
}

// assertReaches checks that TCP connections from the lab's client to
// 10.96.0.10:80 reach exactly the named pods.
func assertReaches(t *testing.T, n *node, want ...string) {
	t.Helper()
	dst := netip.MustParseAddrPort("10.96.0.10:80")
	got, err := n.lab.Client().Spread(context.Background(), netlab.TCP, dst, 30)
	if err != nil {
		t.Fatalf("%s: %v", dst, err)
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("%s reached %v, want exactly %v", dst, got, want)
	}
}

// changeNames lists "verb name" for every set and chain change.
func changeNames(p *applynft.Plan) []string {
	var out []string
	for _, c := range p.Changes.Sets {
		out = append(out, fmt.Sprintf("%s %s", c.Verb, c.Set.Name))
	}
	for _, c := range p.Changes.Chains {
		out = append(out, fmt.Sprintf("%s %s", c.Verb, c.Name))
	}
	return out
}
