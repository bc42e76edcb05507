// Package kubeletlab runs a real Kubernetes cluster on this machine for
// the kubelet end-to-end test (test/e2e/kubelet): etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd and kubelet, all
// built from the Go module proxy (hack/testcluster/build.sh), with runc
// and the CNI plugins of the system. It has one node unless
// Options.Nodes asks for more; the control plane runs on the first.
//
// Nothing touches the host: every node's processes run in a network
// namespace the lab creates (the first node is 10.77.0.10 on eth0, the
// next 10.77.0.11...) and in a private mount namespace of that node in
// which /run, /var/lib and /var/log are empty directories of the test and
// /usr/lib (so /lib/modules) is an overlay whose changes stay in the
// test's directory. Another namespace, "the outside" (10.77.0.1), holds
// the bridge that joins the nodes' eth0: external clients and NodePort
// traffic come from there. Pods get their own network namespaces on a
// bridge (cni0) of their node, with the node's /24 of 10.244.0.0/16; each
// node routes the other nodes' ranges to them. The nodes' cgroups are the
// host's cgroup v1 hierarchy (kubelet runs with failCgroupV1: false).
// There is no cluster DNS unless the test deploys one (test/clusterdns)
// and starts the lab with Options.ClusterDNS.
package kubeletlab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// NodeName is the name of the lab's first Node; the next are NodeName-2,
// NodeName-3...
const NodeName = "kubeletlab-node"

// Lab is the running cluster, stopped and removed when the test ends.
type Lab struct {
	*testcluster.Cluster
	net   *network
	nodes []*node
	dir   string
	bin   string // kubelet, kube-controller-manager, kube-scheduler, kubectl
	crun  string // containerd, its shim, ctr
}

// node is one node of the lab: its namespaces, its files and processes.
type node struct {
	name, ip string
	dir      string // its files; the private directories under dir/root
	ns       *namespaces
	procs    map[string]*testcluster.Process
	podCIDR  string // once kube-controller-manager has allocated it
}

// Start starts a one-node cluster with the images given (OCI archives),
// of which sandboxImage is the pause image: StartWith with those Options.
// Pods get no cluster DNS: StartWith gives them one.
func Start(t testing.TB, sandboxImage string, images ...string) *Lab {
	t.Helper()
	return StartWith(t, Options{SandboxImage: sandboxImage, Images: images})
}

// StartWith starts the cluster and waits until every Node is registered
// and Ready, with its pod CIDR. The images are imported into every node's
// containerd first.
func StartWith(t testing.TB, o Options) *Lab {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "ip", "nsenter", "unshare", "mount", "runc")
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		testenv.SkipOrFail(t, "kubeletlab: needs the CNI plugins in /usr/lib/cni (hack/install-deps.sh installs containernetworking-plugins)")
	}
	if o.Nodes < 0 || o.Nodes > maxNodes {
		t.Fatalf("kubeletlab: Options.Nodes is %d, want 0 to %d", o.Nodes, maxNodes)
	}
	l := &Lab{dir: t.TempDir()}
	l.bin = testcluster.NodeBinaries(t)
	l.crun = testcluster.ContainerdBinaries(t)
	begin := time.Now()
	prefix := fmt.Sprintf("%s%d-%x-", netlab.NamePrefix, os.Getpid(), rand.Uint32())
	l.net = newNetwork(t, prefix)
	for i := range max(o.Nodes, 1) {
		l.nodes = append(l.nodes, l.newNode(t, prefix, i))
	}
	first := l.nodes[0].ns
	l.Cluster = testcluster.Start(t, testcluster.WithNode(NodeIP, first.Command, first.Dial))
	for _, n := range l.nodes {
		l.startContainerd(t, n, o.SandboxImage)
	}
	for _, img := range o.Images {
		l.Import(t, img)
	}
	l.startControllers(t)
	// One node after the other, so that the first gets the first pod
	// range (NodePodCIDR): kube-controller-manager allocates them in the
	// order Nodes register.
	for _, n := range l.nodes {
		l.startKubelet(t, n, o.ClusterDNS)
		l.waitPodCIDR(t, n)
	}
	l.routePods(t)
	l.waitNodesReady(t)
	t.Logf("kubeletlab: nodes %v Ready in %v", l.Nodes(), time.Since(begin).Round(time.Millisecond))
	return l
}

// newNode creates node i's namespaces and directory.
func (l *Lab) newNode(t testing.TB, prefix string, i int) *node {
	t.Helper()
	n := &node{name: nodeName(i), ip: nodeIP(i), dir: l.dir, procs: map[string]*testcluster.Process{}}
	if i > 0 {
		n.dir = filepath.Join(l.dir, n.name)
		if err := os.Mkdir(n.dir, 0o755); err != nil {
			t.Fatalf("kubeletlab: %v", err)
		}
	}
	n.ns = newNamespaces(t, l.net, prefix, i, n.dir)
	return n
}

// Nodes returns the names of the lab's Nodes, the first one's (NodeName)
// first.
func (l *Lab) Nodes() []string {
	var names []string
	for _, n := range l.nodes {
		names = append(names, n.name)
	}
	return names
}

// NodeIP returns the address of node i (0 is the first, NodeIP).
func (l *Lab) NodeIP(i int) string { return l.nodes[i].ip }

// Path returns where a path of the first node's private mount namespace
// is, seen from the test's: under one of the private directories, or
// unchanged.
func (l *Lab) Path(p string) string { return l.nodes[0].path(p) }

func (n *node) path(p string) string {
	for _, d := range privateDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return filepath.Join(n.dir, "root", p)
		}
	}
	return p
}

// write writes a file of the node (a path of its mount namespace).
func (n *node) write(t testing.TB, path, content string) {
	t.Helper()
	p := n.path(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
}

// waitPodCIDR waits until node n is registered and has its pod range,
// then writes its CNI configuration, which containerd reads when it
// appears.
func (l *Lab) waitPodCIDR(t testing.TB, n *node) {
	t.Helper()
	err := l.poll(t, 3*time.Minute, func(ctx context.Context) error {
		node, err := l.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Spec.PodCIDR == "" {
			return fmt.Errorf("node %s has no pod CIDR yet", n.name)
		}
		n.podCIDR = node.Spec.PodCIDR
		return nil
	})
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if n == l.nodes[0] && n.podCIDR != NodePodCIDR {
		t.Fatalf("kubeletlab: node %s has pod CIDR %s, want %s", n.name, n.podCIDR, NodePodCIDR)
	}
	n.write(t, cniConfDir+"/10-kubeletlab.conflist", cniConfig(n.podCIDR))
}

// waitNodesReady waits until every Node is Ready.
func (l *Lab) waitNodesReady(t testing.TB) {
	t.Helper()
	err := l.poll(t, 3*time.Minute, func(ctx context.Context) error {
		for _, n := range l.nodes {
			node, err := l.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := nodeReady(node); err != nil {
				return fmt.Errorf("node %s: %v", n.name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
}

// nodeReady returns why node is not Ready, or nil.
func nodeReady(node *corev1.Node) error {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				return fmt.Errorf("not Ready: %s: %s", c.Reason, c.Message)
			}
			return nil
		}
	}
	return fmt.Errorf("no Ready condition yet")
}

// poll calls cond every half second until it returns nil or timeout
// passes, failing early if a process of the node has exited.
func (l *Lab) poll(t testing.TB, timeout time.Duration, cond func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		for _, n := range l.nodes {
			for _, p := range n.procs {
				if err := p.Running(); err != nil {
					return err
				}
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
