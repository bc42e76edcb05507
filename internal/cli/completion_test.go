package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// completions runs `__complete args...` through the cobra command and
// returns the values offered and the directive line (":4" is NoFileComp).
func completions(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	out, stderr, code := run(t, "", append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletion checks the values offered for the flags that have a fixed
// set, per command.
func TestCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"plan", "--mode", ""}, []string{"iptables", "nftables", "ipvs", "userspace"}},
		{[]string{"reset", "--mode", ""}, []string{"iptables", "nftables", "ipvs", "userspace"}},
		{[]string{"proxy", "--mode", ""}, []string{"userspace"}},
		{[]string{"render", "-o", ""}, []string{"text", "json", "yaml"}},
		{[]string{"plan", "--output", ""}, []string{"text", "json", "yaml"}},
		{[]string{"apply", "--family", ""}, []string{"all", "ipv4", "ipv6"}},
		{[]string{"render", "--color", ""}, colorValues},
		{[]string{"--color", ""}, colorValues},
		{[]string{"render", "--detect-local-mode", ""}, []string{"ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix"}},
		{[]string{"plan", "--iptables-backend", ""}, []string{"auto", "legacy", "nft"}},
	} {
		got, directive := completions(t, tc.args...)
		if !slices.Equal(got, tc.want) || directive != ":4" {
			t.Errorf("%v: %v %s, want %v :4 (no files)", tc.args, got, directive, tc.want)
		}
	}
	// Every scheduler offered is one that render accepts.
	got, _ := completions(t, "render", "--mode=ipvs", "--ipvs-scheduler", "")
	if len(got) < 11 {
		t.Errorf("--ipvs-scheduler: %v", got)
	}
	for _, s := range got {
		if _, stderr, code := run(t, "", "render", "--example", "--mode=ipvs", "--ipvs-scheduler="+s); code != 0 {
			t.Errorf("--ipvs-scheduler=%s is offered but refused: %s", s, stderr)
		}
	}
	// An API server that cannot be reached completes no node names, fast.
	start := time.Now()
	if got, directive := completions(t, "render", "--server=https://127.0.0.1:1", "--node-name", ""); len(got) != 0 || directive != ":4" {
		t.Errorf("--node-name without an API server: %v %s, want nothing and :4", got, directive)
	}
	if took := time.Since(start); took > 2*nodeCompletionTimeout {
		t.Errorf("--node-name without an API server took %v", took)
	}
}

// TestCompleteNodeNames completes --node-name from a real API server, as
// the user of --kubeconfig sees the Nodes.
func TestCompleteNodeNames(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	c := testcluster.Start(t)
	c.Apply(t, "apiVersion: v1\nkind: Node\nmetadata: {name: worker-1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: worker-2}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: control-plane}\n")
	// The list is served from the watch cache, which may lag a moment
	// behind the Nodes just written.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, _ := completions(t, "render", "--kubeconfig="+c.AdminKubeconfig, "--node-name", ""); len(got) == 3 {
			break
		}
	}
	for _, cmd := range []string{"render", "plan", "apply", "snapshot", "proxy"} {
		got, directive := completions(t, cmd, "--kubeconfig="+c.AdminKubeconfig, "--node-name", "work")
		if !slices.Equal(got, []string{"worker-1", "worker-2"}) || directive != ":4" {
			t.Errorf("%s --node-name work: %v %s, want [worker-1 worker-2] :4", cmd, got, directive)
		}
	}
	// A user who may not list Nodes gets no names, and no error.
	if got, directive := completions(t, "render", "--kubeconfig="+c.UserKubeconfig, "--node-name", ""); len(got) != 0 || directive != ":4" {
		t.Errorf("--node-name without permission: %v %s, want nothing and :4", got, directive)
	}
}

// TestCompletionFromSnapshot: with --example or -f FILE, --node-name and
// trace --service complete from the snapshot, with no API server.
func TestCompletionFromSnapshot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(file, example.Snapshot, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"render", "--example", "--node-name", ""}, []string{"node1"}},
		{[]string{"trace", "-f", file, "--node-name", "node"}, []string{"node1"}},
		{[]string{"trace", "--example", "--service", "kube-system/"}, []string{"kube-system/kube-dns"}},
		{[]string{"trace", "-f", file, "--service", "shop/fr"}, []string{"shop/frontend"}},
	} {
		got, directive := completions(t, tc.args...)
		if !slices.Equal(got, tc.want) || directive != ":4" {
			t.Errorf("%v: %v %s, want %v :4 (no files)", tc.args, got, directive, tc.want)
		}
	}
}

// TestCompletionIgnoresSpecialFiles: -f naming a FIFO completes nothing
// rather than blocking the shell on it.
func TestCompletionIgnoresSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, directive := completions(t, "trace", "-f", fifo, "--node-name", ""); len(got) != 0 || directive != ":4" {
		t.Errorf("-f FIFO: %v %s, want nothing and :4", got, directive)
	}
}
