// Package kubeletlab runs a real single-node Kubernetes cluster on this
// machine for the kubelet end-to-end test (test/e2e/kubelet): etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, containerd and
// kubelet, all built from the Go module proxy (hack/testcluster/build.sh),
// with runc and the CNI plugins of the system.
//
// Nothing touches the host: every node process runs in a network namespace
// the lab creates ("the node", 10.77.0.10 on eth0) and in a private mount
// namespace in which /run, /var/lib and /var/log are empty
// directories of the test and /usr/lib (so /lib/modules) is an overlay
// whose changes stay in the test's directory. A second namespace, "the
// outside" (10.77.0.1), is the node's only neighbour: external clients and
// NodePort traffic come from there. Pods get their own network namespaces
// on a bridge (cni0, 10.244.0.0/24). The node's cgroups are the host's
// cgroup v1 hierarchy (kubelet runs with failCgroupV1: false). There is
// no cluster DNS unless the test deploys one (test/clusterdns) and starts
// the lab with Options.ClusterDNS.
package kubeletlab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// NodeName is the name of the lab's one Node.
const NodeName = "kubeletlab-node"

// Lab is the running cluster, stopped and removed when the test ends.
type Lab struct {
	*testcluster.Cluster
	ns   *namespaces
	dir  string
	bin  string // kubelet, kube-controller-manager, kube-scheduler, kubectl
	crun string // containerd, its shim, ctr

	procs map[string]*testcluster.Process
}

// Start starts the cluster and waits until the Node is registered and
// Ready, with its pod CIDR. The images given (OCI archives) are imported
// into containerd first; sandboxImage, the pause image, must be among them
// for any pod to start. Pods get no cluster DNS: StartWith gives them one.
func Start(t testing.TB, sandboxImage string, images ...string) *Lab {
	t.Helper()
	return StartWith(t, Options{SandboxImage: sandboxImage, Images: images})
}

// StartWith is Start with the options o.
func StartWith(t testing.TB, o Options) *Lab {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "ip", "nsenter", "unshare", "mount", "runc")
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		testenv.SkipOrFail(t, "kubeletlab: needs the CNI plugins in /usr/lib/cni (hack/install-deps.sh installs containernetworking-plugins)")
	}
	l := &Lab{dir: t.TempDir(), procs: map[string]*testcluster.Process{}}
	l.bin = testcluster.NodeBinaries(t)
	l.crun = testcluster.ContainerdBinaries(t)
	begin := time.Now()
	l.ns = newNamespaces(t, l.dir)
	// Replies of a pod to another pod of the bridge that reached it
	// through a ClusterIP must see the proxy's conntrack entries.
	if err := l.ns.Sysctl("net.bridge.bridge-nf-call-iptables", "1"); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.Cluster = testcluster.Start(t, testcluster.WithNode(NodeIP, l.ns.Command, l.ns.Dial))
	l.startContainerd(t, o.SandboxImage)
	for _, img := range o.Images {
		l.Import(t, img)
	}
	l.startControllers(t)
	l.startKubelet(t, o.ClusterDNS)
	l.waitNodeReady(t)
	t.Logf("kubeletlab: node %s Ready in %v", NodeName, time.Since(begin).Round(time.Millisecond))
	return l
}

// Path returns where a path of the node's private mount namespace is, seen
// from the test's: under one of the private directories, or unchanged.
func (l *Lab) Path(p string) string {
	for _, d := range privateDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return filepath.Join(l.dir, "root", p)
		}
	}
	return p
}

// write writes a file of the node (a path of its mount namespace).
func (l *Lab) write(t testing.TB, path, content string) {
	t.Helper()
	p := l.Path(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
}

// waitNodeReady waits until the Node exists, is Ready and has its pod CIDR.
func (l *Lab) waitNodeReady(t testing.TB) {
	t.Helper()
	err := l.poll(t, 3*time.Minute, func(ctx context.Context) error {
		node, err := l.Admin.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Spec.PodCIDR != NodePodCIDR {
			return fmt.Errorf("node has pod CIDR %q, want %s", node.Spec.PodCIDR, NodePodCIDR)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return fmt.Errorf("node not Ready: %s: %s", c.Reason, c.Message)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
}

// poll calls cond every half second until it returns nil or timeout
// passes, failing early if a process of the node has exited.
func (l *Lab) poll(t testing.TB, timeout time.Duration, cond func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		for _, p := range l.procs {
			if err := p.Running(); err != nil {
				return err
			}
		}
		last := cond(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %v", timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
