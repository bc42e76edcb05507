package deploykit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// KubeProxyRef is the name hack/kube-proxy-image.sh tags its image with.
const KubeProxyRef = "registry.k8s.io/kube-proxy:v1.37.2"

// KubeProxyImage runs hack/kube-proxy-image.sh into dir and returns the
// OCI archive it wrote: the real kube-proxy v1.37.2 with iptables, nft,
// ipset, conntrack and an iptables-wrapper, for `ctr images import`.
func KubeProxyImage(t testing.TB, dir string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(filepath.Join(repo.MustRoot(t), "hack/kube-proxy-image.sh"), "--out", dir)
	cmd.Dir = repo.MustRoot(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/kube-proxy-image.sh: %v\n%s", err, stderr.String())
	}
	t.Logf("hack/kube-proxy-image.sh built the image in %v", time.Since(start).Round(time.Second))
	return strings.TrimSpace(string(out))
}

// ProductImage runs hack/image.sh for this machine's architecture only
// (the downloaded packages are cached; the default builds every
// architecture) into dir and returns the archive it wrote: the tool's own
// image, as a user builds it.
func ProductImage(t testing.TB, dir string) string {
	t.Helper()
	root := repo.MustRoot(t)
	start := time.Now()
	cmd := exec.Command(filepath.Join(root, "hack/image.sh"), "--arch", runtime.GOARCH, "--out", dir)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "kubectl-svcproxy.oci.tar")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, out)
	}
	t.Logf("hack/image.sh built the image in %v", time.Since(start).Round(time.Second))
	return path
}

// KubeProxy is what KubeProxyManifests sets.
type KubeProxy struct {
	Mode        string // iptables, nftables or ipvs
	Image       string // KubeProxyRef, or another
	APIServer   string // https://HOST:PORT, as the node reaches it
	ClusterCIDR string
}

// KubeProxyManifests returns kube-proxy as kubeadm deploys it (its
// `addon/kube-proxy` phase): the ServiceAccount kube-proxy bound to the
// bootstrap ClusterRole system:node-proxier, the ConfigMap kube-proxy with
// a KubeProxyConfiguration and a kubeconfig, and the DaemonSet kube-proxy,
// privileged in the host network. conntrack's maxPerCore is zero, as in
// test/conformance and in kind: a lab node shares the host's kernel,
// whose global conntrack table size and hash size kube-proxy must not
// change. The TCP timeouts keep kubeadm's defaults (24h established, 1h
// CLOSE_WAIT): they are sysctls of the node's own network namespace, and
// Kubernetes' e2e test "should set TCP CLOSE_WAIT timeout" checks them.
func KubeProxyManifests(k KubeProxy) string {
	return fmt.Sprintf(kubeProxyTemplate, k.APIServer, k.Mode, k.ClusterCIDR, k.Image)
}

const kubeProxyTemplate = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kubeadm:node-proxier
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier
subjects:
- kind: ServiceAccount
  name: kube-proxy
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    app: kube-proxy
data:
  kubeconfig.conf: |-
    apiVersion: v1
    kind: Config
    clusters:
    - cluster:
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
        server: %s
      name: default
    contexts:
    - context:
        cluster: default
        namespace: default
        user: default
      name: default
    current-context: default
    users:
    - name: default
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  config.conf: |-
    apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    mode: %s
    clusterCIDR: %s
    clientConnection:
      kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
    conntrack:
      maxPerCore: 0
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    k8s-app: kube-proxy
spec:
  selector:
    matchLabels:
      k8s-app: kube-proxy
  updateStrategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
        k8s-app: kube-proxy
    spec:
      serviceAccountName: kube-proxy
      hostNetwork: true
      priorityClassName: system-node-critical
      nodeSelector:
        kubernetes.io/os: linux
      tolerations:
      - operator: Exists
      containers:
      - name: kube-proxy
        image: %s
        imagePullPolicy: IfNotPresent
        command:
        - /usr/local/bin/kube-proxy
        - --config=/var/lib/kube-proxy/config.conf
        - --hostname-override=$(NODE_NAME)
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        securityContext:
          privileged: true
        volumeMounts:
        - name: kube-proxy
          mountPath: /var/lib/kube-proxy
        - name: xtables-lock
          mountPath: /run/xtables.lock
        - name: lib-modules
          mountPath: /lib/modules
          readOnly: true
      volumes:
      - name: kube-proxy
        configMap:
          name: kube-proxy
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
      - name: lib-modules
        hostPath:
          path: /lib/modules
`
