// Package ipvsvm compares kubectl-svcproxy's ipvs mode with the real
// kube-proxy v1.37.2 run with --proxy-mode=ipvs, inside the IPVS test VM
// (test/vmtest): the host has no IPVS to offer. The host starts the
// test API server (test/testcluster) and boots the VM with a
// user-mode NIC, through which the guest reaches the API server on the
// host's loopback; the guest runs kube-proxy and `kubectl svcproxy apply`
// for each golden scenario, each in a network namespace of its own, and
// compares IPVS, ipsets, kube-ipvs0 and the helper iptables chains. See
// docs/CONFORMANCE.md.
package ipvsvm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/conformance"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

func TestMain(m *testing.M) { vmtest.Main(m) }

// Where the host puts the guest's inputs. Not under /tmp or /run, which
// the guest's init mounts over.
const (
	guestDir        = "/conformance"
	guestRoot       = guestDir + "/repo" // go.mod, testdata/golden, testdata/conformance
	guestKubeProxy  = guestDir + "/kube-proxy"
	guestTool       = guestDir + "/kubectl-svcproxy"
	guestKubeconfig = guestDir + "/admin.kubeconfig"
)

// defaultScenarios are the golden scenarios the VM run compares by
// default, the most varied for ipvs within the VM time budget: session
// affinity (persistence), externalTrafficPolicy=Local (local sets, health
// check node ports), load balancer source ranges (the firewall chains and
// source sets) and dual-stack (both families' IPVS and ipsets).
var defaultScenarios = []string{"session-affinity", "etp-local", "loadbalancer-source-ranges", "dual-stack"}

// scenariosEnv selects other scenarios: a comma-separated list of golden
// case names, or "all".
const scenariosEnv = "SVCPROXY_IPVS_CONFORMANCE_SCENARIOS"

// TestIPVSConformanceInVM starts the test API server, builds the tool,
// and boots the VM with kube-proxy, the tool, the scenarios, the
// allow-list and an admin kubeconfig that reaches the API server through
// qemu's user-mode network; the guest runs TestGuestIPVSConformance.
func TestIPVSConformanceInVM(t *testing.T) {
	if vmtest.InGuest() {
		// Not a missing prerequisite: the host-side test must not recurse.
		t.Skip("vmtest: already inside the VM")
	}
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and the VM with kube-proxy (-short)")
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		guestRoot + "/go.mod":                              filepath.Join(root, "go.mod"),
		guestRoot + "/testdata/conformance/allowlist.yaml": filepath.Join(root, "testdata", "conformance", "allowlist.yaml"),
	}
	names := defaultScenarios
	if v := os.Getenv(scenariosEnv); v == "all" {
		names = allScenarios(t, root)
	} else if v != "" {
		names = strings.Split(v, ",")
	}
	for _, n := range names {
		p := filepath.Join(root, "testdata", "golden", n+".txtar")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", scenariosEnv, err)
		}
		files[guestRoot+"/testdata/golden/"+n+".txtar"] = p
	}
	files[guestKubeProxy] = testcluster.KubeProxy(t)
	c := testcluster.Start(t)
	files[guestKubeconfig] = testcluster.GuestKubeconfig(t, c.AdminKubeconfig, vmtest.HostLoopback)
	files[guestTool] = toolbin.Path(t)
	// About a minute per scenario under TCG, plus the boot.
	opts := vmtest.Options{Files: files, Memory: "2G", UserNet: true, Timeout: time.Duration(len(names)+3) * 90 * time.Second}
	vmtest.RunOpts(t, ".", opts, "-test.run", "^TestGuestIPVSConformance$")
}

// allScenarios names every golden case.
func allScenarios(t *testing.T, root string) []string {
	t.Helper()
	all, err := conformance.LoadScenarios(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	return names
}
