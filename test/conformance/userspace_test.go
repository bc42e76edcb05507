package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// singleStack reports whether a golden scenario is for one IP family:
// v1.25's userspace mode was single-stack, so TestUserspace runs every
// golden scenario but the dual-stack ones.
func singleStack(s *Scenario) bool {
	return len(s.Config.Families) <= 1
}

// checkUserspace is the allow-list's mode of TestUserspace's differences.
const checkUserspace Check = "userspace"

// usEnv is what the userspace test shares between scenarios.
type usEnv struct {
	root, kubeProxy string
	cluster         *testcluster.Cluster
	objects         Objects
	allow           *AllowList
}

// TestUserspace compares kube-proxy v1.25's userspace mode, the last
// release that had it, with `kubectl svcproxy proxy`: the portal and
// NodePort rules each programs (proxy ports named after their Service
// port, see CanonicalUserspace) and the backends a connection to each
// ClusterIP reaches through each proxy. No allow-list: a difference fails.
func TestUserspace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and kube-proxy v1.25 (-short)")
	}
	requireMachine(t)
	// StartKubeProxyV125's way around a low open-file limit.
	testenv.RequireTools(t, "unshare", "mount", "sh")
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	e := &usEnv{root: root, kubeProxy: testcluster.KubeProxyV125(t)}
	if e.allow, err = LoadAllowList(filepath.Join(root, "testdata", "conformance", "allowlist-userspace.yaml")); err != nil {
		t.Fatal(err)
	}
	e.cluster = testcluster.Start(t)
	e.objects = Objects{Client: e.cluster.Admin}
	if err := e.objects.MarkDefaultService(context.Background()); err != nil {
		t.Fatal(err)
	}
	scenarios, err := LoadScenarios(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scenarios {
		if singleStack(s) {
			t.Run(s.Name, func(t *testing.T) { e.run(t, s) })
		}
	}
	for _, u := range e.allow.Unused() {
		t.Logf("allow-list entry explained nothing in this run: %s", u)
	}
}

// run loads one scenario, runs kube-proxy v1.25 and the tool's proxy each
// in a lab of its own, and compares rules and traffic.
func (e *usEnv) run(t *testing.T, s *Scenario) {
	ctx := context.Background()
	snap, apiSnap := e.load(t, s)
	snapFile := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := writeSnapshot(snapFile, apiSnap); err != nil {
		t.Fatal(err)
	}
	tables, _, err := cluster.Build(apiSnap, s.ClusterConfig())
	if err != nil {
		t.Fatal(err)
	}
	ports := tables.ForFamily(nodetable.IPv4).Ports

	toolLab := userspaceLab(t, s, snap, ports)
	tool := e.startTool(t, toolLab.Node(), snapFile, s.Config.NodeName)
	defer tool.Stop()
	want, err := waitUserspace(ctx, toolLab.Node(), tool, nil)
	if err != nil {
		t.Fatalf("kubectl svcproxy proxy: %v\n%s", err, tool.Tail(20))
	}

	kpLab := userspaceLab(t, s, snap, ports)
	kp := e.startKubeProxy(t, s, kpLab.Node())
	defer kp.Stop()
	got, err := waitUserspace(ctx, kpLab.Node(), kp.Process, func(c Canonical) bool { return len(c) >= len(want) })
	if err != nil {
		t.Errorf("kube-proxy v1.25: %v\n%s", err, kp.Tail(20))
	}
	res := &Result{Scenario: s.Name, Check: checkUserspace, Diff: LineDiff(got, want)}
	res.Explain(e.allow)
	if len(res.Unexplained) > 0 {
		t.Errorf("userspace rules differ from kube-proxy v1.25's (- kube-proxy only, + kubectl-svcproxy only):\n%s", strings.Join(res.Unexplained, "\n"))
	} else {
		t.Logf("userspace rules as kube-proxy v1.25's: %d lines, %d allowed differences", len(got), len(res.Diff))
	}
	for i := range ports {
		comparePortTraffic(t, &ports[i], kpLab, toolLab)
	}
	compareUserspaceHealth(t, kpLab.Node(), toolLab.Node(), apiSnap)
}

// load clears the API server, writes the scenario's objects plus the
// Endpoints v1.25 reads, and returns the snapshot and the objects as the
// API server returns them.
func (e *usEnv) load(t *testing.T, s *Scenario) (snap, apiSnap *cluster.Snapshot) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.ClearEndpoints(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.Load(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.LoadEndpoints(ctx, EndpointsFromSlices(snap)); err != nil {
		t.Fatal(err)
	}
	if err := e.objects.WaitLoaded(ctx, Expect(snap)); err != nil {
		t.Fatal(err)
	}
	if apiSnap, err = fromapi.Snapshot(ctx, e.cluster.Admin, s.Config.NodeName); err != nil {
		t.Fatal(err)
	}
	return snap, apiSnap
}

// userspaceLab is the scenario's node lab with the default route on an
// address-less link (UplinkDefaultRoute) and a pod serving every ready
// IPv4 endpoint of ports.
func userspaceLab(t *testing.T, s *Scenario, snap *cluster.Snapshot, ports []nodetable.ServicePort) *netlab.Lab {
	t.Helper()
	lab := NodeLab(t, s, snap)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	if err := UplinkDefaultRoute(ctx, lab.Node()); err != nil {
		t.Fatal(err)
	}
	pods := map[netip.Addr]*netlab.Pod{}
	served := map[string]bool{}
	for _, sp := range ports {
		for _, ep := range sp.AllEndpoints {
			if !ep.Ready || !ep.IP.Is4() || served[string(sp.Name.Protocol)+ep.String()] {
				continue
			}
			served[string(sp.Name.Protocol)+ep.String()] = true
			p := pods[ep.IP]
			if p == nil {
				p = lab.AddPod(podName(ep.IP), ep.IP)
				pods[ep.IP] = p
			}
			if err := servePod(p, sp.Name.Protocol, uint16(ep.Port)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return lab
}

func podName(ip netip.Addr) string { return "ep-" + strings.ReplaceAll(ip.String(), ".", "-") }

func servePod(p *netlab.Pod, proto nodetable.Protocol, port uint16) error {
	switch proto {
	case nodetable.TCP:
		return p.ServeTCP(port)
	case nodetable.UDP:
		return p.ServeUDP(port)
	}
	return nil
}

// startTool runs `kubectl svcproxy proxy` on the snapshot in ns.
func (e *usEnv) startTool(t *testing.T, ns netlab.NS, snapFile, nodeName string) *testcluster.Process {
	t.Helper()
	dir := t.TempDir()
	cmd := ns.Command(context.Background(), toolbin.Path(t), "proxy", "-f", snapFile,
		"--node-name="+nodeName, "--family=ipv4", "--iptables-backend=nft",
		"--state-dir="+filepath.Join(dir, "state"), "--lock-file="+filepath.Join(dir, "svcproxy.lock"),
		"--metrics-bind-address=", "--healthz-bind-address="+healthzAddr, "-v=1")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
	p, err := testcluster.StartCommand("kubectl-svcproxy proxy", cmd, filepath.Join(dir, "proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startKubeProxy runs kube-proxy v1.25 in userspace mode in ns, reaching
// the API server through a bridge.
func (e *usEnv) startKubeProxy(t *testing.T, s *Scenario, ns netlab.NS) *KubeProxy {
	t.Helper()
	kubeconfig := e.cluster.NewBridge(t, ns).Kubeconfig(t, e.cluster.AdminKubeconfig)
	data, err := s.UserspaceKubeProxyConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "kube-proxy.yaml")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	kp, err := StartKubeProxyV125(ns, e.kubeProxy, config, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// waitUserspace waits until the userspace rules in ns exist (the jump from
// nat OUTPUT), ready accepts them (nil: any), and two dumps a second apart
// are equal; it returns the last dump, also on a timeout.
func waitUserspace(ctx context.Context, ns netlab.NS, p *testcluster.Process, ready func(Canonical) bool) (Canonical, error) {
	deadline := time.Now().Add(stableTimeout)
	var prev Canonical
	for {
		if err := p.Running(); err != nil {
			return prev, err
		}
		cctx, cancel := context.WithTimeout(ctx, commandTimeout)
		cur, err := DumpUserspace(cctx, ns)
		cancel()
		if err != nil {
			return prev, err
		}
		if slices.Equal(prev, cur) && hasPortalJump(cur) && (ready == nil || ready(cur)) {
			return cur, nil
		}
		if time.Now().After(deadline) {
			return cur, fmt.Errorf("userspace rules not complete and stable after %v", stableTimeout)
		}
		prev = cur
		time.Sleep(time.Second)
	}
}

func hasPortalJump(c Canonical) bool {
	return slices.ContainsFunc(c, func(l string) bool {
		return strings.HasPrefix(l, "IPv4 nat -A OUTPUT ") && strings.HasSuffix(l, "-j KUBE-PORTALS-HOST")
	})
}
