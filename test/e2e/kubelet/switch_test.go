package kubelet

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/labproxy"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// TestKubeProxySwitch runs the real kube-proxy v1.37.2 from the image of
// hack/kube-proxy-image.sh as kubeadm deploys it, then switches the node
// to kubectl-svcproxy and back, as docs/DEPLOY.md says: delete
// kube-proxy's DaemonSet, `kubectl apply -k` the tool's overlay of the same
// mode, then delete the tool's DaemonSet and apply kube-proxy's again. A
// long-lived connection through the ClusterIP and request loops to the
// ClusterIP and the NodePort run through both switches: not one request
// may fail, and the connection must stay on its backend. In iptables mode,
// then in nftables mode on the same cluster (reset in between).
func TestKubeProxySwitch(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables", "nft")
	dir := t.TempDir()
	im := buildImages(t, dir)
	product := deploykit.ProductImage(t, dir)
	kubeProxy := deploykit.KubeProxyImage(t, dir)
	tool := toolbin.Path(t)
	l := kubeletlab.Start(t, pauseImage, im.archives...)
	image := l.Import(t, product)
	if names := l.Import(t, kubeProxy); !slices.Equal(names, []string{deploykit.KubeProxyRef}) {
		t.Fatalf("hack/kube-proxy-image.sh's archive holds images %v, want %s", names, deploykit.KubeProxyRef)
	}
	if len(image) != 1 {
		t.Fatalf("hack/image.sh's archive holds images %v, want one", image)
	}
	w := startWorkload(t, l, im.agent)
	for _, mode := range []string{"iptables", "nftables"} {
		if !t.Run(mode, func(t *testing.T) { switchMode(t, l, w, mode, image[0], tool) }) {
			break
		}
	}
}

// switchMode runs kube-proxy in mode, switches to the tool and back under
// traffic, then removes kube-proxy and its rules for the next mode.
func switchMode(t *testing.T, l *kubeletlab.Lab, w *workload, mode, image, tool string) {
	labproxy.KubeProxy(t, l, mode)
	checkKubeProxyRules(t, l, w, mode)
	w.reachAll(t)
	tr := w.startTraffic(t)
	tr.flowing(t, "under kube-proxy", 3*time.Second)
	begin := time.Now()
	kubectl(t, l, "", "-n", "kube-system", "delete", "daemonset", "kube-proxy", "--wait")
	waitNoPodLabeled(t, l, "k8s-app=kube-proxy")
	kubectl(t, l, "", "apply", "-k", overlay(t, mode, image))
	waitDaemonSet(t, l)
	firstSync(t, l)
	t.Logf("kube-proxy -> kubectl-svcproxy: %v from the delete to the tool's first sync", time.Since(begin).Round(time.Millisecond))
	tr.flowing(t, "under kubectl-svcproxy", 3*time.Second)
	w.reachAll(t)

	begin = time.Now()
	kubectl(t, l, "", "-n", "kube-system", "delete", "daemonset", dsName, "--wait")
	waitNoPod(t, l)
	labproxy.KubeProxy(t, l, mode)
	t.Logf("kubectl-svcproxy -> kube-proxy: %v from the delete to kube-proxy's first sync", time.Since(begin).Round(time.Millisecond))
	tr.flowing(t, "under kube-proxy again", 3*time.Second)
	w.reachAll(t)
	tr.stop()

	kubectl(t, l, "", "-n", "kube-system", "delete", "daemonset", "kube-proxy", "--wait")
	waitNoPodLabeled(t, l, "k8s-app=kube-proxy")
	if out, err := l.Command(tool, "reset", "--mode="+mode).CombinedOutput(); err != nil {
		t.Fatalf("kubectl-svcproxy reset --mode=%s: %v\n%s", mode, err, out)
	}
	checkReset(t, l)
}

// checkKubeProxyRules checks what the image brings: kube-proxy runs its
// --version, and its rules for the web Service are on the node, in the
// iptables backend that the wrapper chose or in nftables (which kube-proxy
// writes with the image's nft).
func checkKubeProxyRules(t *testing.T, l *kubeletlab.Lab, w *workload, mode string) {
	t.Helper()
	version := kubectl(t, l, "", "-n", "kube-system", "exec", "daemonset/kube-proxy", "--", "kube-proxy", "--version")
	if !strings.HasPrefix(version, "Kubernetes v") {
		t.Errorf("kube-proxy --version: %q", version)
	}
	if mode == "nftables" {
		out, err := l.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
		if err != nil || !strings.Contains(string(out), w.clusterIP+" . tcp . 80") {
			t.Errorf("kube-proxy's nftables rules for %s are not on the node: %v\n%s", w.clusterIP, err, out)
		}
		return
	}
	v := kubectl(t, l, "", "-n", "kube-system", "exec", "daemonset/kube-proxy", "--", "iptables", "-V")
	backend := map[bool]string{true: "nft", false: "legacy"}[strings.Contains(v, "nf_tables")]
	if !strings.Contains(v, "(nf_tables)") && !strings.Contains(v, "(legacy)") {
		t.Fatalf("iptables -V in the kube-proxy pod: %q", v)
	}
	service := "-A KUBE-SERVICES -d " + w.clusterIP + "/32"
	for _, b := range []string{"nft", "legacy"} {
		save := nodeSave(t, l, b)
		if b == backend && (!strings.Contains(save, service) || !strings.Contains(save, "default/web")) {
			t.Errorf("kube-proxy's rules for %s are not in the node's %s backend:\n%s", w.clusterIP, b, save)
		}
		if b != backend && strings.Contains(save, "KUBE-SERVICES") {
			t.Errorf("the wrapper chose %s, but the %s backend holds kube-proxy's chains too:\n%s", backend, b, save)
		}
		// kubelet's own chains, made with the node's iptables, say which
		// backend the node uses; the wrapper must have chosen it.
		if b != backend && (strings.Contains(save, "KUBE-IPTABLES-HINT") || strings.Contains(save, "KUBE-KUBELET-CANARY")) {
			t.Errorf("the wrapper chose %s, but kubelet's chains are in %s", backend, b)
		}
	}
	t.Logf("kube-proxy image: %s; its iptables wrapper chose %s, where its rules are", strings.TrimSpace(version), backend)
}

// nodeSave returns the node's nat and mangle tables in one iptables backend.
func nodeSave(t *testing.T, l *kubeletlab.Lab, backend string) string {
	t.Helper()
	var all strings.Builder
	for _, table := range []string{"nat", "mangle"} {
		out, err := l.Command("iptables-"+backend+"-save", "-t", table).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-%s-save -t %s: %v\n%s", backend, table, err, out)
		}
		all.Write(out)
	}
	return all.String()
}

// waitNoPodLabeled waits until no pod of kube-system has the label.
func waitNoPodLabeled(t *testing.T, l *kubeletlab.Lab, selector string) {
	t.Helper()
	for range 120 {
		out, _ := l.Kubectl("-n", "kube-system", "get", "pods", "-l", selector, "-o", "name")
		if strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("pods %s still there after 60s:\n%s", selector, describe(l))
}
