// Package labproxy runs a service proxy on the kubelet lab as a cluster
// does, as a DaemonSet: the real kube-proxy as kubeadm deploys it, or
// kubectl-svcproxy from deploy/'s overlay under a user's own (docs/DEPLOY.md),
// and waits until it has programmed the node. The kubelet end-to-end tests
// and the upstream e2e suite both start their proxies here.
package labproxy

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
)

// ToolDaemonSet is the DaemonSet of deploy/base/daemonset.yaml.
const ToolDaemonSet = "kubectl-svcproxy"

// KubeProxy applies kube-proxy's manifests (kubeadm's) in mode, with the
// image of hack/kube-proxy-image.sh (deploykit.KubeProxyRef, which the
// caller has imported), and waits until its pods run and it has synced once.
func KubeProxy(t testing.TB, l *kubeletlab.Lab, mode string) {
	t.Helper()
	manifests := deploykit.KubeProxyManifests(deploykit.KubeProxy{
		Mode: mode, Image: deploykit.KubeProxyRef,
		APIServer: "https://" + kubeletlab.NodeIP + ":6443", ClusterCIDR: kubeletlab.PodCIDR,
	})
	if out, err := l.KubectlInput(manifests, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rollout(t, l, "kube-proxy")
	waitKubeProxySynced(t, l)
}

// Tool applies the user's overlay of docs/DEPLOY.md for mode (the image,
// and the API server at the node's address) and waits until the
// DaemonSet's pods are Ready: its readiness probe passes after the first
// sync.
func Tool(t testing.TB, l *kubeletlab.Lab, mode, image string) {
	t.Helper()
	dir := deploykit.WriteOverlay(t, filepath.Join(t.TempDir(), "overlay"), deploykit.User{
		Mode: mode, Image: image, APIServer: "https://" + kubeletlab.NodeIP + ":6443", ClusterCIDR: kubeletlab.PodCIDR,
	})
	if out, err := l.Kubectl("apply", "-k", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rollout(t, l, ToolDaemonSet)
}

// rollout waits for a DaemonSet of kube-system to have every pod Ready.
func rollout(t testing.TB, l *kubeletlab.Lab, name string) {
	t.Helper()
	start := time.Now()
	if _, err := l.Kubectl("-n", "kube-system", "rollout", "status", "daemonset/"+name, "--timeout=180s"); err != nil {
		pods, _ := l.Kubectl("get", "pods", "-A", "-o", "wide")
		t.Fatalf("%v\npods:\n%s\nkubelet:\n%s", err, pods, l.Log("kubelet", 30))
	}
	t.Logf("labproxy: DaemonSet %s rolled out in %v", name, time.Since(start).Round(time.Millisecond))
}

// syncedMetric is kube-proxy's time of its last successful sync.
var syncedMetric = regexp.MustCompile(`(?m)^kubeproxy_sync_proxy_rules_last_timestamp_seconds(\{[^}]*\})? (\S+)$`)

// waitKubeProxySynced waits until kube-proxy's metrics say it has synced,
// on every node of the lab: it has no readiness probe (kubeadm gives it
// none), and it logs no sync at its default verbosity.
func waitKubeProxySynced(t testing.TB, l *kubeletlab.Lab) {
	t.Helper()
	start := time.Now()
	for i := range l.Nodes() {
		waitKubeProxySyncedOn(t, l, i, start)
	}
}

// waitKubeProxySyncedOn waits until kube-proxy has synced on node i, at
// most a minute after start.
func waitKubeProxySyncedOn(t testing.TB, l *kubeletlab.Lab, i int, start time.Time) {
	t.Helper()
	var last string
	for time.Since(start) < time.Minute {
		body, err := l.NodeGetOn(context.Background(), i, "http://127.0.0.1:10249/metrics")
		if err == nil {
			for _, m := range syncedMetric.FindAllStringSubmatch(body, -1) {
				if v, _ := strconv.ParseFloat(m[2], 64); v > 0 {
					t.Logf("kube-proxy synced on %s %v after its DaemonSet rolled out", l.Nodes()[i], time.Since(start).Round(time.Millisecond))
					return
				}
			}
			last = "no sync yet"
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ := l.Kubectl("-n", "kube-system", "logs", "daemonset/kube-proxy", "--tail=30")
	t.Fatalf("kube-proxy did not sync on %s in a minute (%s); its log:\n%s", l.Nodes()[i], last, out)
}
