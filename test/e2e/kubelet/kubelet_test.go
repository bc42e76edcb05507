// Package kubelet is the end-to-end test on a real cluster
// (test/kubeletlab), of one node unless said otherwise: it deploys
// kubectl-svcproxy as a user does, with the image of hack/image.sh and `kubectl apply -k` of an overlay of the
// user's own on top of deploy/overlays/MODE (test/deploykit), then serves a Deployment through a ClusterIP and
// NodePort Service and checks that traffic from a pod, from the node and
// from outside reaches every backend, follows scaling, and that
// established connections survive the DaemonSet pod's replacement; in
// iptables mode, then in nftables mode on the same cluster; then the
// userspace overlay (the `proxy` command), for reach and scaling. IPVS is not
// run: this kernel has no IPVS (test/e2e/ipvs runs it in a VM).
// TestKubeProxySwitch (switch_test.go) switches a node from the real
// kube-proxy to the tool and back under traffic. TestClusterDNS
// (dns_test.go) gives the cluster DNS as kubeadm does, behind the tool.
// TestTwoNodes (twonode_test.go) checks the lab's network across two nodes.
package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// dsName is the DaemonSet of deploy/base/daemonset.yaml.
const dsName = "kubectl-svcproxy"

func TestKubelet(t *testing.T) {
	begin := time.Now()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables", "nft")
	dir := t.TempDir()
	im := buildImages(t, dir)
	product := deploykit.ProductImage(t, dir)
	tool := toolbin.Path(t)
	l := kubeletlab.Start(t, pauseImage, im.archives...)
	names := l.Import(t, product)
	if len(names) != 1 {
		t.Fatalf("hack/image.sh's archive holds images %v, want one", names)
	}
	if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
		t.Logf("ipvs mode not run: this kernel has no IPVS (%v)", err)
	}
	w := startWorkload(t, l, im.agent)
	for _, mode := range []string{"iptables", "nftables"} {
		if !t.Run(mode, func(t *testing.T) { runMode(t, l, w, mode, names[0], tool) }) {
			break
		}
	}
	t.Run("userspace", func(t *testing.T) { runUserspace(t, l, w, names[0], tool) })
	t.Logf("TestKubelet took %v", time.Since(begin).Round(time.Second))
}

// runMode deploys the DaemonSet in mode, runs the checks, then removes it
// and resets the node's rules for the next mode.
func runMode(t *testing.T, l *kubeletlab.Lab, w *workload, mode, image, tool string) {
	kubectl(t, l, "", "apply", "-k", overlay(t, mode, image))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("DaemonSet pod log:\n%s", podLog(l))
		}
	})
	waitDaemonSet(t, l)
	firstSync(t, l)
	// The first mode finds web at 3 replicas, the next one at 5. Pods
	// that scale removes are terminating when scale returns, and the
	// proxy drops them only once the EndpointSlice controller has said
	// so; followScale waits for that, as reachAll would not.
	w.followScale(t, 3)
	w.reachAll(t)
	w.followScale(t, 1)
	w.followScale(t, 5)
	w.survivesRestart(t)
	kubectl(t, l, "", "-n", "kube-system", "delete", "daemonset", dsName, "--wait")
	waitNoPod(t, l)
	if out, err := l.Command(tool, "reset", "--mode="+mode).CombinedOutput(); err != nil {
		t.Fatalf("kubectl-svcproxy reset --mode=%s: %v\n%s", mode, err, out)
	}
	checkReset(t, l)
}

// runUserspace deploys deploy/overlays/userspace, whose DaemonSet runs
// the userspace proxy (`proxy`), and checks that traffic from every
// vantage reaches the backends and follows scaling. A replaced pod breaks
// the connections it proxies, as kube-proxy v1.25's did, so the restart
// check of the other modes does not apply.
func runUserspace(t *testing.T, l *kubeletlab.Lab, w *workload, image, tool string) {
	kubectl(t, l, "", "apply", "-k", overlay(t, "userspace", image))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("DaemonSet pod log:\n%s", podLog(l))
		}
	})
	waitDaemonSet(t, l)
	w.followScale(t, 2)
	w.followScale(t, 3)
	kubectl(t, l, "", "-n", "kube-system", "delete", "daemonset", dsName, "--wait")
	waitNoPod(t, l)
	if out, err := l.Command(tool, "reset", "--mode=userspace").CombinedOutput(); err != nil {
		t.Fatalf("kubectl-svcproxy reset --mode=userspace: %v\n%s", err, out)
	}
	checkReset(t, l)
}

// checkReset checks that no service rule is left on the node, in either
// iptables backend or in nftables, so that the next mode starts clean.
func checkReset(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	for _, dump := range [][]string{{"iptables-legacy-save"}, {"iptables-nft-save"}, {"nft", "list", "tables"}} {
		out, err := l.Command(dump[0], dump[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(dump, " "), err, out)
		}
		for _, owned := range []string{"KUBE-SERVICES", "KUBE-SVC-", "kube-proxy"} {
			if strings.Contains(string(out), owned) {
				t.Errorf("after reset, %s still shows %s:\n%s", strings.Join(dump, " "), owned, out)
			}
		}
	}
}

// overlay writes the user's overlay of docs/DEPLOY.md for mode: the lab's
// image, and the API server at the node's address.
func overlay(t *testing.T, mode, image string) string {
	return deploykit.WriteOverlay(t, filepath.Join(t.TempDir(), "overlay"), deploykit.User{
		Mode: mode, Image: image, APIServer: "https://" + kubeletlab.NodeIP + ":6443", ClusterCIDR: kubeletlab.PodCIDR,
	})
}

// kubectl runs the built kubectl as the admin and returns its output.
func kubectl(t *testing.T, l *kubeletlab.Lab, stdin string, args ...string) string {
	t.Helper()
	out, err := l.KubectlInput(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitDaemonSet waits for the DaemonSet's pod to be Running and Ready.
func waitDaemonSet(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	start := time.Now()
	if _, err := l.Kubectl("-n", "kube-system", "rollout", "status", "daemonset/"+dsName, "--timeout=180s"); err != nil {
		t.Fatalf("%v\npods:\n%s\nkubelet:\n%s", err, describe(l), l.Log("kubelet", 30))
	}
	t.Logf("DaemonSet pod Running and Ready in %v", time.Since(start).Round(time.Millisecond))
}

// waitNoPod waits until the DaemonSet's pod is gone.
func waitNoPod(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	waitNoPodLabeled(t, l, "app.kubernetes.io/name="+dsName)
}

func describe(l *kubeletlab.Lab) string {
	out, _ := l.Kubectl("get", "pods", "-A", "-o", "wide")
	ev, _ := l.Kubectl("get", "events", "-A", "--sort-by=.lastTimestamp")
	return out + "\n" + lastLines(ev, 30)
}

func podLog(l *kubeletlab.Lab) string {
	out, _ := l.Kubectl("-n", "kube-system", "logs", "daemonset/"+dsName, "--tail=50")
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
