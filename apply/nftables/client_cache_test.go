package nftables_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// freshLive reads the table with a client that has no cache.
func freshLive(t *testing.T, n *node, family nft.Family) *nft.Ruleset {
	t.Helper()
	c := openClient(t, n.lab.Node())
	rs, err := c.Read(family, "kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestCacheIsExact checks the generation cache: after applies (with
// tables, sets and chains created and deleted), the state it serves equals
// a fresh read; the next run (a new client on the same directory) uses its
// file; and any change by someone else, even between plan and apply, is
// seen by the next plan. On the kernel, because the cache rests on what it
// says: the generation moves by one per commit, anyone's, and a new
// connection in the namespace has the same cookie. The cache's decisions
// are also tested on the in-memory kernel (cache_fake_linux_test.go).
func TestCacheIsExact(t *testing.T) {
	n := newNode(t)
	dir := cacheDir(t)
	n.client.CacheDir = dir
	var dual []*nft.Ruleset
	for _, gc := range goldenCases(t) {
		if len(gc.tables) == 2 {
			dual = gc.tables
		}
	}
	n.apply(t, dual...)
	n.apply(t, labRender("10.244.0.11", "10.244.0.12"), dual[1])
	// The apply itself left the state at the current generation.
	var gen uint32
	if err := n.lab.Node().Do(func() (err error) { gen, err = nftgen.Read(); return err }); err != nil {
		t.Fatal(err)
	}
	for _, f := range []nft.Family{nft.IPv4, nft.IPv6} {
		data, err := os.ReadFile(filepath.Join(dir.Path(), "nftables-"+string(f)+"-kube-proxy.table"))
		if err == nil {
			_, err = statefile.Unseal(data, n.client.CacheFileKey(f, "kube-proxy", gen))
		}
		if err != nil {
			t.Fatalf("after apply, the %s cache is not at generation %d: %v", f, gen, err)
		}
	}
	for _, p := range n.plan(t, labRender("10.244.0.11", "10.244.0.12"), dual[1]) {
		if !p.Changes.Empty() {
			t.Fatalf("plan after apply is not empty:\n%s", planText(t, p))
		}
		if got, want := canonical(p.Live), canonical(freshLive(t, n, p.Family)); got != want {
			t.Fatalf("%s: the cached state differs from the kernel:\n--- cache\n%s--- kernel\n%s", p.Family, got, want)
		}
	}

	// The next run trusts a valid file at the current generation: one
	// written to hold another state shows in its plan.
	name := "nftables-ip-kube-proxy.table"
	data, err := os.ReadFile(filepath.Join(dir.Path(), name))
	if err != nil {
		t.Fatal(err)
	}
	key := n.client.CacheFileKey(nft.IPv4, "kube-proxy", gen)
	payload, err := statefile.Unseal(data, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Store(name, key, editCachePayload(t, payload)); err != nil {
		t.Fatal(err)
	}
	next := openClient(t, n.lab.Node())
	next.CacheDir = dir
	plans, err := next.Plan(context.Background(), []*nft.Ruleset{labRender("10.244.0.11", "10.244.0.12")})
	if err != nil {
		t.Fatal(err)
	}
	if got := changeNames(plans[0]); !slices.Equal(got, []string{"replace-chain reject-chain"}) {
		t.Fatalf("a new client did not use the cache file: changes %q", got)
	}
	if err := dir.WriteFile(name, data); err != nil {
		t.Fatal(err)
	}

	// Someone else's change moves the generation: the next plan reads.
	n.nft(t, "", "add", "element", "ip", "kube-proxy", "cluster-ips", "{ 10.96.9.9 }")
	desired := labRender("10.244.0.11", "10.244.0.12")
	if got := changeNames(n.plan(t, desired)[0]); !slices.Equal(got, []string{"update-set cluster-ips"}) {
		t.Fatalf("a change by nft was not seen: %q", got)
	}
	n.apply(t, desired)

	// A change made between plan and apply is not cached away.
	plans = n.plan(t, labRender("10.244.0.12"))
	n.nft(t, "", "add", "chain", "ip", "kube-proxy", "by-hand")
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	if got := changeNames(n.plan(t, labRender("10.244.0.12"))[0]); !slices.Equal(got, []string{"delete-chain by-hand"}) {
		t.Fatalf("a chain added between plan and apply was hidden by the cache: %q", got)
	}
}

// editCachePayload changes the rule of reject-chain in a cache file's
// payload (the table, as encodeCache writes it) to drop.
func editCachePayload(t *testing.T, payload []byte) []byte {
	t.Helper()
	table, err := applynft.DecodeCache(payload)
	if err != nil {
		t.Fatal(err)
	}
	table.Chain("reject-chain").Rules = []nft.Rule{"drop"}
	return applynft.EncodeCache(table)
}
