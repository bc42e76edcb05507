// Package clusterdns deploys cluster DNS on the kubelet lab
// (test/kubeletlab) as kubeadm does: CoreDNS at the version kubeadm v1.37
// deploys, built from source (hack/tools/coredns, since no registry is
// reachable) into an image of the name kubeadm uses, with kubeadm's
// ServiceAccount, ClusterRole, ConfigMap, Deployment and the kube-dns
// Service. The lab must be started with kubeletlab.Options.ClusterDNS set
// to ServiceIP, and a service proxy must run for CoreDNS to reach the API
// server (at the ClusterIP of default/kubernetes) and pods to reach
// CoreDNS.
package clusterdns

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/ociimage"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

const (
	// Version is CoreDNS's: kubeadm v1.37.2's constants.CoreDNSVersion,
	// and hack/tools/coredns's.
	Version = "v1.14.6"
	// ImageRef is the image's name, the one kubeadm deploys.
	ImageRef = "registry.k8s.io/coredns/coredns:" + Version
	// ServiceIP is the kube-dns Service's ClusterIP, kubeadm's default
	// (the tenth address of the ServiceCIDR 10.96.0.0/16 of
	// test/testcluster): kubeletlab.Options.ClusterDNS.
	ServiceIP = "10.96.0.10"
)

// Image builds CoreDNS (testcluster.CoreDNSBinary) and writes an OCI
// archive of it named ImageRef into dir, for kubeletlab.Options.Images or
// Lab.Import; it returns the archive's path. The image holds /coredns,
// its entrypoint, as upstream's does.
func Image(t testing.TB, dir string) string {
	t.Helper()
	data, err := os.ReadFile(testcluster.CoreDNSBinary(t))
	if err != nil {
		t.Fatalf("clusterdns: %v", err)
	}
	path := filepath.Join(dir, "coredns-"+Version+".oci.tar")
	_, err = ociimage.WriteArchive(path, ImageRef, ociimage.Image{
		Platform:   ociimage.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Layers:     []ociimage.Layer{{Files: []ociimage.File{{Path: "/coredns", Mode: 0o755, Data: data}}}},
		Entrypoint: []string{"/coredns"},
	})
	if err != nil {
		t.Fatalf("clusterdns: image %s: %v", ImageRef, err)
	}
	return path
}

// Deploy applies kubeadm's CoreDNS objects to the lab and waits until the
// Deployment is available: CoreDNS has read the cluster's Services and
// answers (its readiness probe, /ready). A CoreDNS that has restarted on
// the way fails the test: a crash loop (such as the loop plugin's exit on
// a forwarding loop) can be Ready for a moment. The image must have been
// imported.
func Deploy(t testing.TB, l *kubeletlab.Lab) {
	t.Helper()
	start := time.Now()
	if out, err := l.KubectlInput(manifests(), "apply", "-f", "-"); err != nil {
		t.Fatalf("clusterdns: %v\n%s", err, out)
	}
	if _, err := l.Kubectl("-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=180s"); err != nil {
		pods, _ := l.Kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "wide")
		logs, _ := l.Kubectl("-n", "kube-system", "logs", "deployment/coredns", "--tail=30")
		t.Fatalf("clusterdns: CoreDNS not available: %v\npods:\n%s\nCoreDNS:\n%s\nkubelet:\n%s", err, pods, logs, l.Log("kubelet", 20))
	}
	restarts, err := l.Kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns",
		"-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}")
	if err != nil || strings.TrimSpace(restarts) != "0" {
		logs, _ := l.Kubectl("-n", "kube-system", "logs", "deployment/coredns", "--previous", "--tail=30")
		t.Fatalf("clusterdns: CoreDNS restarted (%s, %v); its previous log:\n%s", restarts, err, logs)
	}
	t.Logf("clusterdns: CoreDNS %s available in %v", Version, time.Since(start).Round(time.Millisecond))
}

func splitLines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }
