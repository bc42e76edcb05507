package conformance

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// healthCheckScenario is testdata/conformance/service-health-checks.yaml
// for node1, which the health check, metric and other-proxy tests share.
func (e *env) healthCheckScenario(t *testing.T) (*Scenario, *cluster.Snapshot) {
	t.Helper()
	input, err := os.ReadFile(filepath.Join(e.root, "testdata", "conformance", "service-health-checks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Scenario{Name: "service-health-checks", Input: input, Config: CaseConfig{NodeName: "node1", Config: render.DefaultConfig()}}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s, snap
}

// reload replaces the API server's objects with snap's and waits until its
// watch cache shows them.
func (e *env) reload(t *testing.T, snap *cluster.Snapshot) {
	t.Helper()
	ctx := context.Background()
	if err := e.objects.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Load(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.WaitLoaded(ctx, Expect(snap)); err != nil {
		t.Fatal(err)
	}
}

// startSyncedPair starts kube-proxy and `apply --watch` over snap in mode
// m, each in its own namespace, and waits for both first syncs.
func (e *env) startSyncedPair(t *testing.T, s *Scenario, snap *cluster.Snapshot, m Mode) Pair {
	t.Helper()
	p := Pair{e.startWatched(t, s, snap, m, "kube-proxy"), e.startWatched(t, s, snap, m, "kubectl-svcproxy")}
	if err := p.WaitFirstSync(context.Background(), 2*time.Minute); err != nil {
		t.Fatalf("%v\nkube-proxy:\n%s\ntool:\n%s", err, p[0].Tail(20), p[1].Tail(20))
	}
	return p
}
