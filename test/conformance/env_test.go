package conformance

import (
	"context"
	"path/filepath"
	"testing"

	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// env is what every conformance test needs: the binaries, a running API
// server, and the allow-list.
type env struct {
	root      string
	kubeProxy string
	cluster   *testcluster.Cluster
	objects   Objects
	allow     *AllowList
}

// requireMachine skips (or fails in CI) when this machine cannot run the
// real kube-proxy in namespaces: not root, or tools missing.
func requireMachine(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "ip", "nft", "iptables-nft", "iptables-nft-save", "iptables-nft-restore",
		"ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore")
}

// newEnv checks the machine, builds or finds the binaries and starts the
// API server.
func newEnv(t testing.TB) *env {
	t.Helper()
	requireMachine(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: root}
	// Skips (fails in CI) when the module proxy cannot be reached.
	e.kubeProxy = testcluster.KubeProxy(t)
	if e.allow, err = LoadAllowList(filepath.Join(root, "testdata", "conformance", "allowlist.yaml")); err != nil {
		t.Fatal(err)
	}
	e.cluster = testcluster.Start(t)
	e.objects = Objects{Client: e.cluster.Admin}
	if err := e.objects.MarkDefaultService(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// node is a fresh lab whose node namespace holds the scenario's node IPs
// (netlab's node has 192.168.77.10, and fd00:77::10 with IPv6) plus the
// host addresses config.yaml names, so that kube-proxy finds on its
// interfaces what the renderer is told.
func node(t testing.TB, s *Scenario, snap *cluster.Snapshot) netlab.NS {
	t.Helper()
	return NodeLab(t, s, snap).Node()
}
