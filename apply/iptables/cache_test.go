package iptables_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/netlab"
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
