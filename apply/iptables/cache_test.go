package iptables_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

const cacheFileIPv4 = "iptables-nft-ipv4.rules"

// TestCacheFromAnotherNamespaceIsNotTrusted copies the cache file of one
// namespace into another's cache directory, both at the same nf_tables
// generation: the plan must read the kernel and see the drift.
func TestCacheFromAnotherNamespaceIsNotTrusted(t *testing.T) {
	requireNFT(t)
	snap := snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"))
	a, b := newNode(t, applyipt.NFT), newNode(t, applyipt.NFT)
	a.apply(t, snap)
	b.apply(t, snap)
	for _, cmd := range []string{
		"-t nat -D KUBE-SERVICES 1",
		"-t nat -A KUBE-POSTROUTING -j ACCEPT",
		"-D FORWARD 2",
		"-t nat -N KUBE-SEP-AAAAAAAAAAAAAAAA",
	} {
		b.ipt(t, cmd)
	}
	if gb := netlab.EqualGenerations(t, a.lab.Node(), b.lab.Node()); gb {
		a.read(t) // a's generation moved: store its cache anew
	}
	data, err := os.ReadFile(filepath.Join(cacheDirOf(a), cacheFileIPv4))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cacheDirOf(b), cacheFileIPv4), data, 0o600); err != nil {
		t.Fatal(err)
	}
	b.nextRun()
	if changes := b.plan(t, snap)[0].Changes; len(changes.Changes) != 4 {
		var w strings.Builder
		changes.WriteText(&w, "live")
		t.Fatalf("with another namespace's cache, plan should find the 4 drifts, got:\n%s", w.String())
	}
}

// TestEditedCacheIsNotTrusted deletes a jump from the cache file, keeping
// its generation: the plan must read the kernel, and an apply must not
// insert a second jump.
func TestEditedCacheIsNotTrusted(t *testing.T) {
	n := newNode(t, applyipt.NFT)
	snap := snapshot(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"))
	n.apply(t, snap)
	path := filepath.Join(cacheDirOf(n), cacheFileIPv4)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var jump string
	var kept []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if jump == "" && strings.HasPrefix(l, "-A FORWARD ") && strings.Contains(l, "-j KUBE-") {
			jump = l
			continue
		}
		kept = append(kept, l)
	}
	if jump == "" {
		t.Fatalf("no jump from FORWARD in the cache:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	n.nextRun() // a new run, which has only the file
	n.assertNoChanges(t, snap)
	n.apply(t, snap)
	out, err := n.lab.Node().Run(context.Background(), "iptables-nft-save", "-t", "filter")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.Count(string(out), jump); got != 1 {
		t.Fatalf("the kernel holds %d copies of %q after apply:\n%s", got, strings.TrimSpace(jump), out)
	}
}

func requireNFT(t *testing.T) {
	t.Helper()
	requireKernel(t, applyipt.NFT)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("kernel test: nft not installed (hack/install-deps.sh installs it)")
	}
}

// cacheDirOf is the directory a node's client keeps its cache in.
func cacheDirOf(n *node) string { return n.client.CacheDir.Path() }

// TestCacheInMemory checks that a client that lives on (apply --watch)
// plans from the state it keeps, without a dump and without its file, for
// as long as nobody else writes the kernel, and dumps again once someone
// does.
func TestCacheInMemory(t *testing.T) {
	requireNFT(t)
	n := newNode(t, applyipt.NFT)
	snap := snapshot(web("10.244.0.11", "10.244.1.12"))
	n.apply(t, snap)
	if err := os.Remove(filepath.Join(cacheDirOf(n), cacheFileIPv4)); err != nil {
		t.Fatal(err)
	}
	dumps := n.rec.dumps
	n.apply(t, snapshot(web("10.244.0.11", "10.244.1.13")))
	n.assertNoChanges(t, snapshot(web("10.244.0.11", "10.244.1.13")))
	if n.rec.dumps != dumps {
		t.Errorf("the kernel was dumped %d times although only this client wrote it", n.rec.dumps-dumps)
	}
	n.ipt(t, "-t nat -A KUBE-POSTROUTING -j ACCEPT")
	if changes := n.plan(t, snapshot(web("10.244.0.11", "10.244.1.13")))[0].Changes; len(changes.Changes) != 1 {
		t.Errorf("after another writer's change the plan should repair it, got %d changes", len(changes.Changes))
	}
	if n.rec.dumps == dumps {
		t.Error("after another writer's change the kernel was not dumped")
	}
}

// TestDeferredCacheFiles checks DeferFiles: applies write no file,
// SaveCache writes the state that is still the kernel's, a next run plans
// from that file without a dump, and a state someone else's write has
// made stale is not written.
func TestDeferredCacheFiles(t *testing.T) {
	requireNFT(t)
	n := newNode(t, applyipt.NFT)
	n.client.DeferFiles = true
	snap := snapshot(web("10.244.0.11", "10.244.1.12"))
	n.apply(t, snap)
	path := filepath.Join(cacheDirOf(n), cacheFileIPv4)
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
	n.nextRun()
	dumps := n.rec.dumps
	n.assertNoChanges(t, snap)
	if n.rec.dumps != dumps {
		t.Error("a next run dumped the kernel instead of reading the saved file")
	}

	n.client.DeferFiles = true
	n.apply(t, snapshot(web("10.244.0.11", "10.244.1.13")))
	n.ipt(t, "-t nat -A KUBE-POSTROUTING -j ACCEPT")
	if err := n.client.SaveCache(); err != nil {
		t.Fatal(err)
	}
	if now, err := os.ReadFile(path); err != nil || string(now) != string(saved) {
		t.Errorf("SaveCache wrote a state the kernel no longer holds (err %v)", err)
	}
}
