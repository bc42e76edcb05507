package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// Timeouts of one scenario and mode.
const (
	firstSyncTimeout = 20 * time.Second
	stableTimeout    = 30 * time.Second
	commandTimeout   = 60 * time.Second
)

// TestConformance runs every golden scenario through the real kube-proxy
// and the tool in both modes, prints the report table, and fails on every
// difference the allow-list does not explain.
func TestConformance(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and kube-proxy (-short)")
	}
	e := newEnv(t)
	scenarios, err := LoadScenarios(e.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no golden scenarios found")
	}
	report := &Report{}
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) { e.runScenario(t, s, report) })
	}
	t.Logf("conformance against kube-proxy v1.37.2:\n%s", report.Table(6))
	for _, r := range report.Results() {
		if r.Failed() {
			t.Errorf("%s / %s differs from kube-proxy without an allow-list entry (see the table above)", r.Scenario, r.Check)
		}
	}
	for _, u := range e.allow.Unused() {
		t.Logf("allow-list entry explained nothing in this run: %s", u)
	}
}

// runScenario loads the scenario into the API server and checks both modes
// in parallel.
func (e *env) runScenario(t *testing.T, s *Scenario, report *Report) {
	ctx := context.Background()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Load(ctx, snap); err != nil {
		res := Result{Scenario: s.Name, Err: fmt.Errorf("load into the API server: %w", err)}
		if strings.Contains(err.Error(), `"IPv6": not configured on this cluster`) {
			// test/testcluster starts kube-apiserver with a dual-stack
			// --service-cluster-ip-range; one without IPv6 lacks a
			// prerequisite of the dual-stack scenario.
			res.Err, res.Skipped = nil, "needs a dual-stack test API server: "+err.Error()
		}
		for _, m := range Modes {
			for _, c := range []Check{CheckRules(m), CheckPlan(m)} {
				r := res
				r.Check = c
				report.Add(&r)
			}
		}
		if res.Skipped != "" {
			testenv.SkipOrFail(t, res.Skipped)
		}
		t.Fatal(res.Err)
	}
	if err := e.objects.WaitLoaded(ctx, Expect(snap)); err != nil {
		t.Fatal(err)
	}
	// What the API server returns (allocated fields, defaults, the marked
	// default/kubernetes and the default ServiceCIDR) is what both sides use.
	apiSnap, err := fromapi.Snapshot(ctx, e.cluster.Admin, s.Config.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	snapFile := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := writeSnapshot(snapFile, apiSnap); err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			e.runMode(t, s, snap, apiSnap, m, snapFile, report)
		})
	}
}

// runMode runs kube-proxy in one mode, compares its rules with the tool's,
// and runs plan on its namespace.
func (e *env) runMode(t *testing.T, s *Scenario, snap, apiSnap *cluster.Snapshot, m Mode, snapFile string, report *Report) {
	ctx := context.Background()
	res := &Result{Scenario: s.Name, Check: CheckRules(m)}
	defer report.Add(res)
	kpNS := node(t, s, snap)
	zoned := usesZoneHints(apiSnap, s.Config.NodeName)
	config, err := e.kubeProxyConfig(t, s, m, kpNS, zoned)
	if err != nil {
		res.Err = err
		t.Fatal(err)
	}
	got, err := e.kubeProxyRules(t, m, kpNS, config, zoned)
	if err != nil {
		res.Err = err
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	nfacct := m == IPTables && hasNFAcct(t, kpNS)
	rendered, err := Render(s, apiSnap, nfacct)
	if err != nil {
		res.Err = err
		t.Fatal(err)
	}
	toolNS := node(t, s, snap)
	if err := rendered.Load(cctx, toolNS, m); err != nil {
		res.Err = fmt.Errorf("load the tool's rules: %w", err)
		t.Fatal(res.Err)
	}
	want, err := Dump(cctx, toolNS, m)
	if err != nil {
		res.Err = err
		t.Fatal(err)
	}
	res.Diff = LineDiff(got, want)
	res.Explain(e.allow)
	if len(res.Unexplained) > 0 {
		t.Errorf("%s rules differ from kube-proxy's (- kube-proxy only, + kubectl-svcproxy only):\n%s", m, strings.Join(res.Unexplained, "\n"))
	}
	report.Add(e.planCheck(t, s, m, kpNS, snapFile, config))
}

// kubeProxyConfig writes kube-proxy's configuration file for the scenario
// and mode, with a kubeconfig that reaches the API server (as admin)
// through a bridge into ns, and returns its path.
func (e *env) kubeProxyConfig(t testing.TB, s *Scenario, m Mode, ns netlab.NS, zoned bool) (string, error) {
	path, _, err := e.kubeProxyConfigVia(t, s, m, ns, zoned)
	return path, err
}

// kubeProxyConfigVia is kubeProxyConfig, and the bridge it opened.
func (e *env) kubeProxyConfigVia(t testing.TB, s *Scenario, m Mode, ns netlab.NS, zoned bool) (string, *testcluster.Bridge, error) {
	bridge := e.cluster.NewBridge(t, ns)
	kubeconfig := bridge.Kubeconfig(t, e.cluster.AdminKubeconfig)
	verbosity := 2
	if zoned {
		verbosity = 4 // to see kube-proxy take its node's zone
	}
	data, err := s.KubeProxyConfigV(m, kubeconfig, verbosity)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	return path, bridge, os.WriteFile(path, data, 0o600)
}

// kubeProxyRules runs kube-proxy in ns until its rules are programmed and
// stable, stops it, and returns them.
func (e *env) kubeProxyRules(t *testing.T, m Mode, ns netlab.NS, config string, zoned bool) (Canonical, error) {
	ctx := context.Background()
	kp, err := StartKubeProxy(ns, e.kubeProxy, config, t.TempDir())
	if err != nil {
		return nil, err
	}
	defer kp.Stop()
	if _, err := kp.WaitSynced(ctx, firstSyncTimeout, 100*time.Millisecond); err != nil {
		return nil, fmt.Errorf("%w\nkube-proxy's log:\n%s", err, kp.Tail(30))
	}
	var last Canonical
	dump := func() ([]byte, error) {
		cctx, cancel := context.WithTimeout(ctx, commandTimeout)
		defer cancel()
		c, err := Dump(cctx, ns, m)
		last = c
		return []byte(c.String()), err
	}
	ready := func([]byte) bool { return programmed(last, m) }
	if _, err := kp.WaitStable(ctx, stableTimeout, dump, ready); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, kp.Tail(20))
	}
	if zoned {
		// kube-proxy learns its node's zone from a Node informer event
		// that is not awaited before its first sync (NodeTopologyConfig),
		// and then syncs again: wait for that sync, then for the rules to
		// be stable again.
		if err := kp.WaitTopology(ctx, stableTimeout); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, kp.Tail(20))
		}
		if _, err := kp.WaitStable(ctx, stableTimeout, dump, ready); err != nil {
			return nil, fmt.Errorf("%w\n%s", err, kp.Tail(20))
		}
	}
	kp.Stop()
	return last, nil
}

// usesZoneHints reports whether the node has a zone and some endpoint has
// zone hints: only then does kube-proxy's view of the zone change rules.
func usesZoneHints(s *cluster.Snapshot, nodeName string) bool {
	zoned := false
	for _, n := range s.Nodes {
		if n.Name == nodeName && n.Labels[corev1.LabelTopologyZone] != "" {
			zoned = true
		}
	}
	for _, sl := range s.EndpointSlices {
		for _, ep := range sl.Endpoints {
			if zoned && ep.Hints != nil && len(ep.Hints.ForZones) > 0 {
				return true
			}
		}
	}
	return false
}

// programmed reports whether kube-proxy's dispatch entry point exists in
// both families.
func programmed(c Canonical, m Mode) bool {
	want := []string{"IPv4 nat :KUBE-SERVICES -", "IPv6 nat :KUBE-SERVICES -"}
	if m == NFTables {
		want = []string{"ip chain services", "ip6 chain services"}
	}
	for _, w := range want {
		if !slices.Contains(c, w) {
			return false
		}
	}
	return true
}

// planCheck runs `kubectl svcproxy plan` for the scenario in kube-proxy's
// namespace (kube-proxy stopped), which must find nothing to change.
func (e *env) planCheck(t *testing.T, s *Scenario, m Mode, ns netlab.NS, snapFile, config string) *Result {
	t.Helper()
	res := &Result{Scenario: s.Name, Check: CheckPlan(m)}
	// The binary is built (once) before the clock starts: on a loaded
	// machine the build alone can take longer than the timeout.
	bin := toolbin.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	run := Plan(ctx, ns, bin, snapFile, config, t.TempDir())
	switch {
	case run.NotImplemented():
		res.Skipped = strings.TrimSpace(run.Output)
		t.Logf("plan --mode=%s: %s", m, res.Skipped)
	case run.Code == 0:
	case run.Code == 1:
		res.Diff = run.ChangedLines()
		res.Explain(e.allow)
		if len(res.Unexplained) > 0 {
			t.Errorf("plan %s on kube-proxy's node reports changes (exit 1):\n%s", strings.Join(run.Args, " "), run.Output)
		}
	default:
		res.Err = fmt.Errorf("plan exited %d: %s", run.Code, strings.TrimSpace(run.Output))
		t.Error(res.Err)
	}
	return res
}

// hasNFAcct reports whether the node's kernel has nfacct, as the tool
// and kube-proxy probe it: not from kube-proxy's output.
func hasNFAcct(t *testing.T, ns netlab.NS) bool {
	var ok bool
	if err := ns.Do(func() error { ok = nfacct.Supported(); return nil }); err != nil {
		t.Fatal(err)
	}
	return ok
}
