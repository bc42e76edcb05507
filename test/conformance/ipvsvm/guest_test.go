package ipvsvm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/conformance"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// Timeouts of one scenario in the VM: TCG is slow, and on a loaded host
// (load average 18 on 2 cores was seen) kube-proxy took up to 75 s from
// its start to stable rules.
const (
	firstSyncTimeout = 2 * time.Minute
	stableTimeout    = 90 * time.Second
	commandTimeout   = 2 * time.Minute
)

// guest is what every scenario in the VM needs.
type guest struct {
	cluster *testcluster.Cluster // only Server: the bridges' target
	objects conformance.Objects
	allow   *conformance.AllowList
	report  *conformance.Report
}

// TestGuestIPVSConformance runs inside the VM (TestIPVSConformanceInVM
// boots it): every scenario the host packed, one after the other.
func TestGuestIPVSConformance(t *testing.T) {
	vmtest.RequireGuest(t)
	if err := vmtest.SetupUserNet(); err != nil {
		t.Fatal(err)
	}
	g := newGuest(t)
	scenarios, err := conformance.LoadScenarios(guestRoot)
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("scenarios in %s: %d, %v", guestRoot, len(scenarios), err)
	}
	for _, s := range scenarios {
		t.Run(s.Name, func(t *testing.T) {
			start := time.Now()
			g.runScenario(t, s)
			t.Logf("%s took %v in the VM", s.Name, time.Since(start).Round(100*time.Millisecond))
		})
	}
	t.Logf("ipvs conformance against kube-proxy v1.37.2:\n%s", g.report.Table(10))
	for _, r := range g.report.Results() {
		if r.Failed() {
			t.Errorf("%s / %s differs from kube-proxy without an allow-list entry (see the table above)", r.Scenario, r.Check)
		}
	}
	for _, u := range g.allow.Unused() {
		if strings.Contains(u.Mode, "ipvs") {
			t.Logf("allow-list entry explained nothing in this run: %s", u)
		}
	}
}

func newGuest(t *testing.T) *guest {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", guestKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &guest{cluster: &testcluster.Cluster{Server: cfg.Host}, objects: conformance.Objects{Client: client},
		report: &conformance.Report{}}
	if g.allow, err = conformance.LoadAllowList(filepath.Join(guestRoot, "testdata", "conformance", "allowlist.yaml")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	if err := g.objects.MarkDefaultService(ctx); err != nil {
		t.Fatalf("reach the API server from the guest: %v", err)
	}
	return g
}

// runScenario loads the scenario into the API server, runs kube-proxy in
// one namespace and the tool's apply in another, compares them, and runs
// plan in kube-proxy's namespace.
func (g *guest) runScenario(t *testing.T, s *conformance.Scenario) {
	ctx := t.Context()
	res := &conformance.Result{Scenario: s.Name, Check: conformance.CheckRules(conformance.IPVS)}
	defer g.report.Add(res)
	fail := func(err error) {
		res.Err = err
		t.Fatal(err)
	}
	snap, snapFile, err := g.load(ctx, t, s)
	if err != nil {
		fail(err)
	}
	kpNS := node(t, s, snap)
	kubeconfig := g.cluster.NewBridge(t, kpNS).Kubeconfig(t, guestKubeconfig)
	data, err := s.KubeProxyConfig(conformance.IPVS, kubeconfig)
	if err != nil {
		fail(err)
	}
	config := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		fail(err)
	}
	phase := time.Now()
	got, err := kubeProxyRules(ctx, t, kpNS, config)
	if err != nil {
		fail(err)
	}
	t.Logf("kube-proxy: started, synced, stable and stopped in %v", time.Since(phase).Round(100*time.Millisecond))
	phase = time.Now()
	toolNS := node(t, s, snap)
	if run := runTool(ctx, toolNS, "apply", snapFile, config, t.TempDir()); run.Code != 0 {
		fail(fmt.Errorf("apply exited %d:\n%s", run.Code, run.Output))
	}
	want, err := dumpIPVS(ctx, toolNS)
	if err != nil {
		fail(err)
	}
	t.Logf("kubectl-svcproxy: apply and dump in %v; %d lines compared", time.Since(phase).Round(100*time.Millisecond), len(got))
	res.Diff = conformance.LineDiff(got, want)
	res.Explain(g.allow)
	if len(res.Unexplained) > 0 {
		t.Errorf("ipvs state differs from kube-proxy's (- kube-proxy only, + kubectl-svcproxy only):\n%s", strings.Join(res.Unexplained, "\n"))
	}
	g.report.Add(g.planCheck(t, s, kpNS, snapFile, config))
}

// load writes the scenario's objects into the API server and returns them
// as the API server returned them, also as a snapshot file.
func (g *guest) load(ctx context.Context, t *testing.T, s *conformance.Scenario) (*cluster.Snapshot, string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	snap, err := s.Snapshot()
	if err != nil {
		return nil, "", err
	}
	if err := g.objects.Clear(ctx); err != nil {
		return nil, "", err
	}
	if err := g.objects.Load(ctx, snap); err != nil {
		return nil, "", fmt.Errorf("load into the API server: %w", err)
	}
	if err := g.objects.WaitLoaded(ctx, conformance.Expect(snap)); err != nil {
		return nil, "", err
	}
	apiSnap, err := fromapi.Snapshot(ctx, g.objects.Client, s.Config.NodeName)
	if err != nil {
		return nil, "", err
	}
	var b bytes.Buffer
	if err := apiSnap.WriteYAML(&b); err != nil {
		return nil, "", err
	}
	file := filepath.Join(t.TempDir(), "snapshot.yaml")
	return snap, file, os.WriteFile(file, b.Bytes(), 0o600)
}

// kubeProxyRules runs kube-proxy in ns until its first sync in both
// families and two stable dumps, stops it, and returns the last dump.
func kubeProxyRules(ctx context.Context, t *testing.T, ns netlab.NS, config string) (conformance.Canonical, error) {
	kp, err := conformance.StartKubeProxy(ns, guestKubeProxy, config, t.TempDir())
	if err != nil {
		return nil, err
	}
	defer kp.Stop()
	if _, err := kp.WaitSynced(ctx, firstSyncTimeout, 250*time.Millisecond); err != nil {
		return nil, fmt.Errorf("%w\nkube-proxy's log:\n%s", err, kp.Tail(30))
	}
	t.Logf("kube-proxy: first sync in both families %v after its start", time.Since(kp.Started).Round(100*time.Millisecond))
	var last conformance.Canonical
	dump := func() ([]byte, error) {
		cctx, cancel := context.WithTimeout(ctx, commandTimeout)
		defer cancel()
		c, err := dumpIPVS(cctx, ns)
		last = c
		return []byte(c.String()), err
	}
	ready := func(b []byte) bool {
		return bytes.Contains(b, []byte("IPv4 nat :KUBE-SERVICES -")) && bytes.Contains(b, []byte("IPv6 nat :KUBE-SERVICES -"))
	}
	if _, err := kp.WaitStable(ctx, stableTimeout, dump, ready); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, kp.Tail(20))
	}
	kp.Stop()
	return last, nil
}

// planCheck runs `kubectl svcproxy plan` in kube-proxy's namespace
// (kube-proxy stopped), which must find nothing to change.
func (g *guest) planCheck(t *testing.T, s *conformance.Scenario, ns netlab.NS, snapFile, config string) *conformance.Result {
	res := &conformance.Result{Scenario: s.Name, Check: conformance.CheckPlan(conformance.IPVS)}
	start := time.Now()
	run := runTool(t.Context(), ns, "plan", snapFile, config, t.TempDir())
	t.Logf("plan on kube-proxy's node: exit %d in %v", run.Code, time.Since(start).Round(100*time.Millisecond))
	switch run.Code {
	case 0:
	case 1:
		res.Diff = run.ChangedLines()
		res.Explain(g.allow)
		if len(res.Unexplained) > 0 {
			t.Errorf("plan on kube-proxy's node reports changes (exit 1):\n%s", run.Output)
		}
	default:
		res.Err = fmt.Errorf("plan exited %d: %s", run.Code, strings.TrimSpace(run.Output))
		t.Error(res.Err)
	}
	return res
}

// runTool runs `kubectl-svcproxy <sub> -f snapshot --config kube-proxy's
// config` in ns, on the nf_tables iptables backend, with its lock and
// state in dir and no kubeconfig.
func runTool(ctx context.Context, ns netlab.NS, sub, snapshot, config, dir string) *conformance.PlanRun {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	args := []string{sub, "-f", snapshot, "--config=" + config, "--iptables-backend=nft", "--state-dir=" + filepath.Join(dir, "state")}
	if sub == "apply" {
		args = append(args, "--lock-file="+filepath.Join(dir, "lock"))
	}
	cmd := ns.Command(ctx, guestTool, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run := &conformance.PlanRun{Args: args}
	if err := cmd.Run(); err != nil {
		run.Code = -1
		if exit, ok := err.(*exec.ExitError); ok {
			run.Code = exit.ExitCode()
		} else {
			out.WriteString(err.Error())
		}
	}
	run.Output = out.String()
	return run
}

// node is the node namespace of a fresh conformance.NodeLab.
func node(t *testing.T, s *conformance.Scenario, snap *cluster.Snapshot) netlab.NS {
	t.Helper()
	return conformance.NodeLab(t, s, snap).Node()
}
