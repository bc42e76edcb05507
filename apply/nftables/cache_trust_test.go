package nftables_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

const cacheFileIP = "nftables-ip-kube-proxy.table"

// withCacheDir gives n's client a fresh cache directory.
func withCacheDir(t *testing.T, n *node) *node {
	t.Helper()
	n.client.CacheDir = cacheDir(t)
	return n
}

// nextRun is a new client on n's namespace and cache directory, as the
// next run of the command opens.
func nextRun(t *testing.T, n *node) *node {
	t.Helper()
	var c *applynft.Client
	if n.fake != nil {
		c = n.fake.Client(render.NFTablesOwnership())
	} else {
		c = openClient(t, n.lab.Node())
	}
	c.CacheDir = n.client.CacheDir
	return &node{lab: n.lab, fake: n.fake, client: c}
}

func cacheDirOf(n *node) string { return n.client.CacheDir.Path() }

// TestCacheFromAnotherNamespaceIsNotTrusted copies the cache file of one
// namespace into another's cache directory, both at the same nf_tables
// generation: the next plan must read the kernel and see the drift.
func TestCacheFromAnotherNamespaceIsNotTrusted(t *testing.T) {
	a, b := withCacheDir(t, newNode(t)), withCacheDir(t, newNode(t))
	desired := labRender("10.244.0.11", "10.244.0.12")
	a.apply(t, desired)
	b.apply(t, desired)
	for _, cmd := range []string{
		"delete element ip kube-proxy service-ips { 10.96.0.10 . tcp . 80 }",
		"add element ip kube-proxy cluster-ips { 10.96.9.9 }",
		"add chain ip kube-proxy by-hand",
		"add rule ip kube-proxy services jump by-hand",
	} {
		b.nft(t, "", strings.Fields(cmd)...)
	}
	if netlab.EqualGenerations(t, a.lab.Node(), b.lab.Node()) {
		a = nextRun(t, a)
		a.plan(t, desired) // a's generation moved: store its cache anew
	}
	data, err := os.ReadFile(filepath.Join(cacheDirOf(a), cacheFileIP))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cacheDirOf(b), cacheFileIP), data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := nextRun(t, b).plan(t, desired)[0]
	got := changeNames(p)
	slices.Sort(got)
	want := []string{"delete-chain by-hand", "replace-chain services", "update-set cluster-ips", "update-set service-ips"}
	if !slices.Equal(got, want) {
		t.Fatalf("with another namespace's cache, plan reports %q, want %q:\n%s", got, want, planText(t, p))
	}
}

// editTable changes the table in a cache file and leaves the header (the
// text before the blank line that starts the payload) as it was.
func editTable(t *testing.T, data []byte, edit func(*nft.Ruleset)) []byte {
	t.Helper()
	head, body, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		t.Fatalf("no header in the cache file: %q", data)
	}
	table, err := applynft.DecodeCache(body)
	if err != nil {
		t.Fatal(err)
	}
	edit(table)
	return append(append(head, "\n\n"...), applynft.EncodeCache(table)...)
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
