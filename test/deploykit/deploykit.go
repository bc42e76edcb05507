// Package deploykit renders deploy/'s kustomize overlays as a user does:
// an overlay of the user's own on top of deploy/overlays/MODE that sets
// the image and the ConfigMap's apiserver key (docs/DEPLOY.md), rendered
// with kubectl's built-in kustomize (`kubectl kustomize`, which
// `kubectl apply -k` runs). The manifest tests and the kubelet end-to-end
// test both use it, so that what the lab runs is what deploy/ ships.
package deploykit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// Modes are the overlays under deploy/overlays, one per proxy mode.
var Modes = []string{"iptables", "nftables", "ipvs", "userspace"}

// Image is the image deploy/base/daemonset.yaml names, which a user's
// overlay replaces.
const Image = "ghcr.io/kubectl-svcproxy/kubectl-svcproxy"

// Kubectl returns the kubectl built from kube-apiserver's Kubernetes
// version (hack/testcluster/build.sh node), building it when it is missing.
func Kubectl(t testing.TB) string {
	t.Helper()
	return filepath.Join(testcluster.NodeBinaries(t), "kubectl")
}

// Dir returns the path of a directory under deploy/, such as
// "overlays/nftables" or "base".
func Dir(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(repo.MustRoot(t), "deploy", filepath.FromSlash(name))
}

// Render runs `kubectl kustomize dir` and returns the manifests.
func Render(t testing.TB, kubectl, dir string) string {
	t.Helper()
	cmd := exec.Command(kubectl, "kustomize", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	return string(out)
}

// User is what a user's overlay sets.
type User struct {
	Mode        string // the overlay of deploy/overlays
	Image       string // NAME:TAG, in place of Image
	APIServer   string // https://HOST:PORT, the ConfigMap's apiserver key
	ClusterCIDR string // the cluster-cidr key; empty keeps the base's
}

// WriteOverlay writes the user's kustomization.yaml into dir (which it
// creates), as docs/DEPLOY.md shows it, and returns dir. kustomize takes
// only relative paths to a base, so the overlay names deploy/overlays/MODE
// relative to dir.
func WriteOverlay(t testing.TB, dir string, u User) string {
	t.Helper()
	base, err := filepath.Rel(dir, Dir(t, "overlays/"+u.Mode))
	if err != nil {
		t.Fatal(err)
	}
	name, tag, ok := splitImage(u.Image)
	if !ok {
		t.Fatalf("deploykit: image %q: want NAME:TAG", u.Image)
	}
	literals := "  - apiserver=" + u.APIServer + "\n"
	if u.ClusterCIDR != "" {
		literals += "  - cluster-cidr=" + u.ClusterCIDR + "\n"
	}
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: %s
  newName: %s
  newTag: %s
configMapGenerator:
- name: kubectl-svcproxy
  namespace: kube-system
  behavior: merge
  literals:
%s`, filepath.ToSlash(base), Image, name, tag, literals)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// splitImage splits NAME:TAG at the tag's colon (a registry's port has
// one too, before the last slash).
func splitImage(image string) (name, tag string, ok bool) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", "", false
	}
	return image[:i], image[i+1:], image[i+1:] != ""
}
