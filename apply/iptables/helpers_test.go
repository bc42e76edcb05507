package iptables_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptablesnft"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

var backends = []applyipt.Backend{applyipt.Legacy, applyipt.NFT}

// nsExec runs commands inside one network namespace.
type nsExec struct{ ns string }

func (e nsExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	return applyipt.OSExec{}.Run(ctx, stdin, "ip", append([]string{"netns", "exec", e.ns, name}, args...)...)
}

// recordingExec remembers every restore script it passes on, and can fail
// the restore number failOn (1-based; 0 never fails).
type recordingExec struct {
	inner    applyipt.Execer
	restores [][]byte
	saves    int
	dumps    int // reads of the kernel: saves, plus reads through ReadNFT
	failOn   int
}

func (e *recordingExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	if strings.HasSuffix(name, "-save") {
		e.saves++
		e.dumps++
	}
	if strings.HasSuffix(name, "-restore") {
		e.restores = append(e.restores, stdin)
		if len(e.restores) == e.failOn {
			return nil, fmt.Errorf("%s: injected failure", name)
		}
	}
	return e.inner.Run(ctx, stdin, name, args...)
}

// requireKernel skips (under CI fails) a test that cannot create network
// namespaces or lacks backend b's iptables-restore.
func requireKernel(t testing.TB, b applyipt.Backend) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables-"+string(b)+"-restore")
}

// node is a lab plus a client for the lab's node namespace.
type node struct {
	lab    *netlab.Lab
	client *applyipt.Client
	rec    *recordingExec
}

func newNode(t *testing.T, b applyipt.Backend) *node {
	requireKernel(t, b)
	lab := netlab.New(t)
	rec := &recordingExec{inner: nsExec{ns: lab.Node().Name()}}
	client := &applyipt.Client{Exec: rec, Backend: b, WaitSeconds: 5, Ownership: render.IPTablesOwnership(), CacheDir: cacheDir(t), Generation: generation(lab.Node()), NetnsCookie: netnsCookie(t, lab.Node()), Counters: lab.Node().NFAcctCounters()}
	if b == applyipt.NFT {
		read := readNFT(t, lab.Node())
		client.ReadNFT = func(f nodetable.Family, tables []ipt.TableName) ([]byte, error) {
			rec.dumps++
			return read(f, tables)
		}
	}
	return &node{lab: lab, rec: rec, client: client}
}

// nextRun gives the node a new client with the same settings and cache
// directory, as the next run of the command has: nothing in memory.
func (n *node) nextRun() {
	c := n.client
	n.client = &applyipt.Client{Exec: c.Exec, Backend: c.Backend, WaitSeconds: c.WaitSeconds, Ownership: c.Ownership,
		CacheDir: c.CacheDir, Generation: c.Generation, NetnsCookie: c.NetnsCookie, Counters: c.Counters, ReadNFT: c.ReadNFT}
}

// readNFT is a client's ReadNFT for a lab namespace: a netlink reader
// opened there, as the CLI opens one in its own.
func readNFT(tb testing.TB, ns netlab.NS) func(nodetable.Family, []ipt.TableName) ([]byte, error) {
	tb.Helper()
	var conn *applynft.Conn
	if err := ns.Do(func() (err error) { conn, err = applynft.Open(); return err }); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return iptablesnft.Reader{Conn: conn}.Read
}

// generation reads the nf_tables generation of a lab namespace.
func generation(ns netlab.NS) func() (uint32, error) {
	return func() (uint32, error) {
		var gen uint32
		err := ns.Do(func() (err error) {
			gen, err = nftgen.Read()
			return err
		})
		return gen, err
	}
}

// cacheDir is a fresh cache directory.
func cacheDir(tb testing.TB) *statefile.Dir {
	tb.Helper()
	d, err := statefile.OpenDir(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// netnsCookie is the cookie of a lab namespace.
func netnsCookie(tb testing.TB, ns netlab.NS) uint64 {
	tb.Helper()
	var cookie uint64
	if err := ns.Do(func() (err error) { cookie, err = nftgen.NetnsCookie(); return err }); err != nil {
		tb.Fatal(err)
	}
	return cookie
}

// sh runs an iptables command line in the node namespace.
func (n *node) sh(t *testing.T, line string) {
	t.Helper()
	f := strings.Fields(line)
	if out, err := n.lab.Node().Run(context.Background(), f[0], f[1:]...); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}

// ipt runs iptables of the node's backend.
func (n *node) ipt(t *testing.T, args string) {
	t.Helper()
	n.sh(t, "iptables-"+string(n.client.Backend)+" "+args)
}

func (n *node) read(t *testing.T) *ipt.Ruleset {
	t.Helper()
	rs, err := n.client.Read(context.Background(), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// plan renders the snapshot and plans against the node.
func (n *node) plan(t *testing.T, snapshot string) []*applyipt.Plan {
	t.Helper()
	plans, err := n.client.Plan(context.Background(), []*ipt.Ruleset{renderIPv4(t, snapshot)})
	if err != nil {
		t.Fatal(err)
	}
	return plans
}

// apply plans and applies, returning the restore scripts it sent.
func (n *node) apply(t *testing.T, snapshot string) [][]byte {
	t.Helper()
	before := len(n.rec.restores)
	if err := n.client.Apply(context.Background(), n.plan(t, snapshot)); err != nil {
		t.Fatal(err)
	}
	return n.rec.restores[before:]
}

// assertNoChanges checks that a plan right after finds nothing to do.
func (n *node) assertNoChanges(t *testing.T, snapshot string) {
	t.Helper()
	for _, p := range n.plan(t, snapshot) {
		if !p.Changes.Empty() {
			var b strings.Builder
			p.Changes.WriteText(&b, "live")
			t.Fatalf("plan after apply is not empty:\n%s", b.String())
		}
	}
}

func renderIPv4(t *testing.T, snapshot string) *ipt.Ruleset {
	t.Helper()
	snap, err := cluster.Decode("test", []byte(snapshot))
	if err != nil {
		t.Fatal(err)
	}
	tables, _, err := cluster.Build(snap, cluster.Config{NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netlab.ClusterCIDR}
	return render.IPTables(tables.IPv4, cfg)
}

// foreignView is everything in a dump that the tool does not own: the
// chains it does not own, and the built-in chains without its jump rules.
func foreignView(rs *ipt.Ruleset) string {
	owned := diff.OwnedIPTables(rs, render.IPTablesOwnership())
	var b strings.Builder
	for _, t := range rs.Tables {
		ot := owned.Table(t.Name)
		for _, c := range t.Chains {
			oc := ot.Chain(c.Name)
			if oc != nil && !ipt.IsBuiltin(t.Name, c.Name) {
				continue
			}
			fmt.Fprintf(&b, "%s %s %s\n", t.Name, c.Name, c.Policy)
			for _, r := range c.Rules {
				if oc != nil && contains(oc.Rules, r) {
					continue
				}
				fmt.Fprintf(&b, "  %s\n", r)
			}
		}
	}
	return b.String()
}

func contains(rules []ipt.Rule, r ipt.Rule) bool {
	for _, x := range rules {
		if x == r {
			return true
		}
	}
	return false
}

// countScript counts the chains declared and the lines sent in restore scripts.
func countScript(scripts [][]byte) (chains, lines int) {
	for _, s := range scripts {
		for _, l := range strings.Split(string(s), "\n") {
			switch {
			case strings.HasPrefix(l, ":"):
				chains++
				lines++
			case l != "" && l != "COMMIT" && l != "-S" && !strings.HasPrefix(l, "*"):
				lines++
			}
		}
	}
	return chains, lines
}
