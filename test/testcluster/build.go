package testcluster

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// buildScript is the script, relative to the repository root, that builds
// kube-apiserver, etcd and kube-proxy into a cache directory and prints that
// directory.
const buildScript = "hack/testcluster/build.sh"

// binaries returns the directory holding kube-apiserver and etcd, building
// them first when they are missing (minutes the first time, a second after).
// It skips the test only when this machine cannot build them at all (no go
// command, no module proxy), and never when $CI is set.
func binaries(t testing.TB, args ...string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.SkipOrFail(t, "testcluster: no go command on PATH to build kube-apiserver and etcd")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, buildScript), args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if reason := cannotBuild(stderr.String()); reason != "" {
			testenv.SkipOrFail(t, "testcluster: "+reason+":\n"+stderr.String())
		}
		t.Fatalf("testcluster: %s: %v\n%s", buildScript, err, stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("testcluster: built the binaries in %v\n%s", d.Round(time.Second), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// KubeProxy returns the path of the real kube-proxy, built from the same
// Kubernetes version as kube-apiserver (the reference of
// test/conformance), building it first when it is missing. Like Start,
// it skips the test when this machine cannot build it, unless $CI is set.
func KubeProxy(t testing.TB) string {
	t.Helper()
	return filepath.Join(binaries(t), "kube-proxy")
}

// KubeProxyV125 returns the path of kube-proxy v1.25, the last release
// with the userspace mode (the reference of test/conformance's
// userspace test), building it first when it is missing (hack/tools/kubeproxy125).
// Like KubeProxy, it skips the test when this machine cannot build it,
// unless $CI is set.
func KubeProxyV125(t testing.TB) string {
	t.Helper()
	return filepath.Join(binaries(t, "kube-proxy-v1.25"), "kube-proxy")
}

// cannotBuild recognises, in the build's error output, a machine that cannot
// download modules; it returns why, or "" for a real build failure.
func cannotBuild(stderr string) string {
	for _, sign := range []string{
		"GOPROXY=off", "GOFLAGS=-mod=vendor", "module lookup disabled",
		"dial tcp", "no such host", "connection refused", "i/o timeout", "TLS handshake timeout",
	} {
		if strings.Contains(stderr, sign) {
			return "cannot download kube-apiserver and etcd from the Go module proxy (" + sign + ")"
		}
	}
	return ""
}

// NodeBinaries returns the directory holding kubelet,
// kube-controller-manager, kube-scheduler and kubectl of kube-apiserver's
// version (`build.sh node`), building them first when they are missing.
// Like Start, it skips the test when this machine cannot build them,
// unless $CI is set.
func NodeBinaries(t testing.TB) string {
	t.Helper()
	return binaries(t, "node")
}

// E2EBinaries returns the directory holding Kubernetes' own end-to-end
// suite of kube-apiserver's version: e2e.test, the ginkgo runner, agnhost
// and regression-issue-74839 (`build.sh e2e`, from hack/tools/e2e),
// building them first when they are missing (about 8 minutes).
func E2EBinaries(t testing.TB) string {
	t.Helper()
	return binaries(t, "e2e")
}

// ContainerdBinaries returns the directory holding containerd,
// containerd-shim-runc-v2 and ctr (`build.sh containerd`, from
// hack/tools/containerd), building them first when they are missing.
func ContainerdBinaries(t testing.TB) string {
	t.Helper()
	return binaries(t, "containerd")
}

// CoreDNSBinary returns the path of CoreDNS, the cluster DNS of the kubelet
// lab (test/clusterdns), at the version kubeadm v1.37 deploys
// (`build.sh coredns`, from hack/tools/coredns), building it first when it
// is missing.
func CoreDNSBinary(t testing.TB) string {
	t.Helper()
	return filepath.Join(binaries(t, "coredns"), "coredns")
}
