package nftables_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The generation cache's decisions on the in-memory kernel: what it
// serves, what it stores, and when it distrusts what it holds (a file of
// another namespace or edited, a read that another commit raced, an
// apply that failed or was not alone). That the kernel's generation moves
// with every commit and the cache then equals a fresh read is
// TestCacheIsExact's, on the kernel.

// addChain is another writer adding an empty chain to ip kube-proxy.
func addChain(n *node, name string) {
	n.fake.Edit(nft.IPv4, "kube-proxy", func(rs *nft.Ruleset) *nft.Ruleset {
		rs.Chains = append(rs.Chains, &nft.Chain{Name: name})
		return rs
	})
}

// addElement is another writer adding an element to a set of ip kube-proxy.
func addElement(n *node, set, key string) {
	n.fake.Edit(nft.IPv4, "kube-proxy", func(rs *nft.Ruleset) *nft.Ruleset {
		s := rs.Set(set)
		s.Elements = append(s.Elements, nft.Element{Key: key})
		return rs
	})
}

// TestCacheOnFake: after applies, plans are served from the cache without
// a read and hold what the kernel holds; the file is at the kernel's
// generation and the next run (a new client on the same directory) plans
// from it; another writer's change, even between plan and apply, is seen
// by the next plan.
func TestCacheOnFake(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	dual := dualStack(t)
	desired := []*nft.Ruleset{labRender("10.244.0.11", "10.244.0.12"), dual[1]}
	n.apply(t, dual...)
	n.apply(t, desired...)
	reads := n.fake.Reads()
	for _, p := range n.plan(t, desired...) {
		if !p.Changes.Empty() {
			t.Fatalf("plan after apply is not empty:\n%s", planText(t, p))
		}
		if got, want := canonical(p.Live), canonical(n.listed(t, p.Family, "kube-proxy")); got != want {
			t.Fatalf("%s: the cached state differs from the kernel:\n--- cache\n%s--- kernel\n%s", p.Family, got, want)
		}
	}
	if n.fake.Reads() != reads {
		t.Fatal("the plans after an apply read the kernel; the cache should serve them")
	}

	// The next run trusts a valid file at the current generation: one
	// written to hold another state shows in its plan, without a read.
	gen := n.fake.Generation()
	dir := n.client.CacheDir
	data, err := os.ReadFile(filepath.Join(dir.Path(), cacheFileIP))
	if err != nil {
		t.Fatal(err)
	}
	key := n.client.CacheFileKey(nft.IPv4, "kube-proxy", gen)
	payload, err := statefile.Unseal(data, key)
	if err != nil {
		t.Fatalf("the file is not at the kernel's generation %d: %v", gen, err)
	}
	if err := dir.Store(cacheFileIP, key, editCachePayload(t, payload)); err != nil {
		t.Fatal(err)
	}
	if got := changeNames(nextRun(t, n).plan(t, desired[0])[0]); !slices.Equal(got, []string{"replace-chain reject-chain"}) || n.fake.Reads() != reads {
		t.Fatalf("a new client did not plan from the cache file: changes %q", got)
	}
	if err := dir.WriteFile(cacheFileIP, data); err != nil {
		t.Fatal(err)
	}

	// Someone else's change moves the generation: the next plan reads.
	addElement(n, "cluster-ips", "10.96.9.9")
	if got := changeNames(n.plan(t, desired[0])[0]); !slices.Equal(got, []string{"update-set cluster-ips"}) {
		t.Fatalf("another writer's change was not seen: %q", got)
	}
	n.apply(t, desired[0])

	// A change made between plan and apply is not cached away.
	plans := n.plan(t, labRender("10.244.0.12"))
	addChain(n, "by-hand")
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	if got := changeNames(n.plan(t, labRender("10.244.0.12"))[0]); !slices.Equal(got, []string{"delete-chain by-hand"}) {
		t.Fatalf("a chain added between plan and apply was hidden by the cache: %q", got)
	}
}

// TestRacedReadIsNotCached: a read during which another transaction
// committed is used for its plan but not kept, since it is exact at no
// known generation: the next plan reads again and sees that change.
func TestRacedReadIsNotCached(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	desired := labRender("10.244.0.11")
	n.apply(t, desired)
	addChain(n, "first") // the next plan has to read
	raced := false
	n.fake.DuringRead = func(nft.Family, string) {
		if !raced {
			raced = true
			addElement(n, "cluster-ips", "10.96.9.9")
		}
	}
	if got := changeNames(n.plan(t, desired)[0]); !slices.Equal(got, []string{"delete-chain first"}) {
		t.Fatalf("the raced plan reports %q, want what was read: [delete-chain first]", got)
	}
	if got := changeNames(n.plan(t, desired)[0]); !slices.Equal(got, []string{"update-set cluster-ips", "delete-chain first"}) {
		t.Fatalf("the plan after a raced read reports %q: the raced read was cached", got)
	}
	if _, err := os.Stat(filepath.Join(n.client.CacheDir.Path(), cacheFileIP)); err != nil {
		t.Fatalf("the plan after the race should have stored its read: %v", err)
	}
}

// TestNoGenerationNoCache: when the generation cannot be read, every plan
// reads the table and nothing is cached, and apply still works.
func TestNoGenerationNoCache(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	n.fake.GenErr = errors.New("no generation")
	desired := labRender("10.244.0.11")
	n.apply(t, desired)
	reads := n.fake.Reads()
	n.assertNoChanges(t, desired)
	n.assertNoChanges(t, desired)
	if got := n.fake.Reads() - reads; got != 2 {
		t.Errorf("two plans read the kernel %d times, want 2", got)
	}
	if _, err := os.Stat(filepath.Join(n.client.CacheDir.Path(), cacheFileIP)); !os.IsNotExist(err) {
		t.Errorf("a cache file was written without a generation (stat: %v)", err)
	}
}

// TestFailedApplyForgetsCache: an apply that fails drops the cache of its
// tables, the file too, and the next plan reads.
func TestFailedApplyForgetsCache(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	n.apply(t, labRender("10.244.0.11"))
	path := filepath.Join(n.client.CacheDir.Path(), cacheFileIP)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	n.fake.BeforeCommit = func(applynft.FakeTx) error { return unix.ENOMEM }
	if err := n.client.Apply(context.Background(), n.plan(t, labRender("10.244.0.12"))); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("want the refusal, got %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the cache file outlived a failed apply (stat: %v)", err)
	}
	reads := n.fake.Reads()
	n.assertNoChanges(t, labRender("10.244.0.11"))
	if n.fake.Reads() == reads {
		t.Error("the plan after a failed apply did not read the kernel")
	}
}

// TestCacheOfAnotherNamespaceOnFake: a cache file of another namespace at
// the same generation is not used (the kernel's namespaces have cookies of
// their own: TestCacheFromAnotherNamespaceIsNotTrusted).
func TestCacheOfAnotherNamespaceOnFake(t *testing.T) {
	a, b := withCacheDir(t, newFakeNode(t)), withCacheDir(t, newFakeNode(t))
	desired := labRender("10.244.0.11", "10.244.0.12")
	a.apply(t, desired)
	b.apply(t, desired)
	addChain(b, "by-hand")
	for a.fake.Generation() < b.fake.Generation() {
		a.fake.Edit(nft.IPv4, "kube-proxy", func(rs *nft.Ruleset) *nft.Ruleset { return rs })
	}
	a = nextRun(t, a)
	a.plan(t, desired) // stores a's table at the generation b is at
	data, err := os.ReadFile(filepath.Join(cacheDirOf(a), cacheFileIP))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cacheDirOf(b), cacheFileIP), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := changeNames(nextRun(t, b).plan(t, desired)[0]); !slices.Equal(got, []string{"delete-chain by-hand"}) {
		t.Fatalf("with another namespace's cache file, plan reports %q", got)
	}
}

// TestDeferredCacheFiles checks DeferFiles: applies write no file,
// SaveCache writes the state that is still the kernel's and a next run
// plans from it, and a state that another writer has made stale is not
// written.
func TestDeferredCacheFiles(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	n.client.DeferFiles = true
	desired := labRender("10.244.0.11", "10.244.0.12")
	n.apply(t, desired)
	path := filepath.Join(cacheDirOf(n), cacheFileIP)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("with DeferFiles, apply wrote the cache file (stat: %v)", err)
	}
	if err := n.client.SaveCache(); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("SaveCache wrote no file: %v", err)
	}
	// The next run serves its plan from the file: an edit made there, at
	// the same generation, shows.
	gen := n.fake.Generation()
	key := n.client.CacheFileKey(nft.IPv4, "kube-proxy", gen)
	payload, err := statefile.Unseal(saved, key)
	if err != nil {
		t.Fatalf("the saved file is not at the kernel's generation %d: %v", gen, err)
	}
	if err := n.client.CacheDir.Store(cacheFileIP, key, editCachePayload(t, payload)); err != nil {
		t.Fatal(err)
	}
	if got := changeNames(nextRun(t, n).plan(t, desired)[0]); !slices.Equal(got, []string{"replace-chain reject-chain"}) {
		t.Fatalf("the next run did not plan from the saved file: changes %q", got)
	}
	if err := n.client.CacheDir.WriteFile(cacheFileIP, saved); err != nil {
		t.Fatal(err)
	}

	n.apply(t, labRender("10.244.0.12"))
	addChain(n, "by-hand")
	if err := n.client.SaveCache(); err != nil {
		t.Fatal(err)
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("SaveCache wrote a state the kernel no longer holds (err %v)", err)
	}
}

// TestEditedCacheIsNotTrusted drops the Service chain from the table in
// the cache file, keeping the file's header: the next plan must read the
// kernel, and an apply must not add the chain's rules a second time.
func TestEditedCacheIsNotTrusted(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	desired := labRender("10.244.0.11", "10.244.0.12")
	n.apply(t, desired)
	path := filepath.Join(cacheDirOf(n), cacheFileIP)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := editTable(t, data, func(rs *nft.Ruleset) {
		rs.Chains = slices.DeleteFunc(rs.Chains, func(c *nft.Chain) bool { return strings.HasPrefix(c.Name, "service-") })
	})
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	next := nextRun(t, n)
	plans := next.plan(t, desired)
	if err := next.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	next.assertApplied(t, desired)
	for _, p := range plans {
		if !p.Changes.Empty() {
			t.Fatalf("an edited cache file was trusted:\n%s", planText(t, p))
		}
	}
}

// TestStoreRemovesGobCacheFile: the first store of a table removes the
// gob file in which builds before the tool's own format kept it.
func TestStoreRemovesGobCacheFile(t *testing.T) {
	n := withCacheDir(t, newFakeNode(t))
	legacy := filepath.Join(cacheDirOf(n), "nftables-ip-kube-proxy.gob")
	if err := os.WriteFile(legacy, []byte("a table in gob"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.apply(t, labRender("10.244.0.11"))
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the gob cache file is still there after a store (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(cacheDirOf(n), cacheFileIP)); err != nil {
		t.Fatalf("no cache file after the apply: %v", err)
	}
}

// goldenTable is the table of one family of the named golden case.
func goldenTable(t *testing.T, name string, family nft.Family) *nft.Ruleset {
	t.Helper()
	for _, gc := range goldenCases(t) {
		for _, rs := range gc.tables {
			if gc.name == name && rs.Family == family {
				return rs
			}
		}
	}
	t.Fatalf("no golden table %s %s", name, family)
	return nil
}

// TestPacketPathElementsOnFake: the elements the packet path puts in an
// affinity set outlive an incremental apply and go with a rebuilt table,
// in the kernel and in the state the cache computes alike.
func TestPacketPathElementsOnFake(t *testing.T) {
	n := newFakeNode(t)
	n.client.Cache = true
	desired := goldenTable(t, "session-affinity", nft.IPv4)
	n.apply(t, desired)
	var affinity string
	n.fake.Edit(nft.IPv4, "kube-proxy", func(rs *nft.Ruleset) *nft.Ruleset {
		for _, s := range rs.Sets {
			if slices.Contains(s.Flags, nft.FlagDynamic) && affinity == "" {
				affinity = s.Name
				s.Elements = []nft.Element{{Key: "10.0.0.1 timeout 3h expires 2h59m"}}
			}
		}
		return rs
	})
	if affinity == "" {
		t.Fatal("no affinity set in the golden case")
	}
	check := func(what string, desired *nft.Ruleset, want int) {
		t.Helper()
		n.apply(t, desired)
		reads := n.fake.Reads()
		p := n.plan(t, desired)[0]
		kernel := n.listed(t, nft.IPv4, "kube-proxy")
		if got := len(kernel.Set(affinity).Elements); got != want {
			t.Fatalf("%s: the kernel's affinity set holds %d elements, want %d", what, got, want)
		}
		if n.fake.Reads() != reads || !p.Changes.Empty() || canonical(p.Live) != canonical(kernel) {
			t.Fatalf("%s: the cache holds another table than the kernel:\n--- cache\n%s--- kernel\n%s", what, canonical(p.Live), canonical(kernel))
		}
	}
	more := *desired
	more.Sets = slices.Clone(desired.Sets)
	for i, s := range more.Sets {
		if s.Name == "cluster-ips" {
			c := *s
			c.Elements = append(slices.Clip(s.Elements), nft.Element{Key: "10.96.99.99"})
			more.Sets[i] = &c
		}
	}
	check("an incremental apply", &more, 1)
	recommented := more
	recommented.Comment = "another comment"
	check("a rebuilt table", &recommented, 0)
}
