package kubeletlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// start starts bin with args in node n's namespaces, its output going to
// <name>.log in the node's directory, and stops it when the test ends.
func (l *Lab) start(t testing.TB, n *node, name, bin string, args ...string) {
	t.Helper()
	cmd := n.ns.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+l.crun+":"+os.Getenv("PATH"))
	p, err := testcluster.StartCommand(name+" on "+n.name, cmd, filepath.Join(n.dir, name+".log"))
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	n.procs[name] = p
	t.Cleanup(p.Stop)
}

// Log returns the last n lines of a process's log on the first node
// ("kubelet", "containerd", "kube-controller-manager", "kube-scheduler").
func (l *Lab) Log(name string, n int) string { return l.NodeLog(0, name, n) }

// NodeLog returns the last n lines of a process's log on node i ("kubelet",
// "containerd"; the controllers run on node 0).
func (l *Lab) NodeLog(i int, name string, n int) string {
	if p := l.nodes[i].procs[name]; p != nil {
		return p.Tail(n)
	}
	return "no process " + name + " on " + l.nodes[i].name
}

// startContainerd starts containerd on node n and waits for its socket.
// Its cleanup first kills every container it runs, whose shims would
// outlive it. The CNI configuration comes later (waitPodCIDR), once the
// node has its pod range.
func (l *Lab) startContainerd(t testing.TB, n *node, sandboxImage string) {
	t.Helper()
	config := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(config, []byte(containerdConfig(sandboxImage)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.start(t, n, "containerd", filepath.Join(l.crun, "containerd"), "--config", config)
	t.Cleanup(func() { l.killContainers(t, n) })
	err := l.poll(t, time.Minute, func(context.Context) error {
		_, err := l.ctr(n, "version")
		return err
	})
	if err != nil {
		t.Fatalf("kubeletlab: containerd on %s: %v", n.name, err)
	}
}

// Ctr runs containerd's ctr in the first node's namespaces, in the CRI's
// namespace k8s.io, and returns its stdout (its stderr holds warnings, such
// as containerd 2's about cgroup v1).
func (l *Lab) Ctr(args ...string) (string, error) { return l.ctr(l.nodes[0], args...) }

// ctr is Ctr on node n.
func (l *Lab) ctr(n *node, args ...string) (string, error) {
	args = append([]string{"--address", containerdSocket, "--namespace", "k8s.io"}, args...)
	cmd := n.ns.Command(filepath.Join(l.crun, "ctr"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s on %s: %v: %s", strings.Join(args[4:], " "), n.name, err, stderr.String())
	}
	return string(out), nil
}

// killContainers kills every task of node n's containerd (pods' processes
// and pause containers) and deletes them, so that no container outlives
// the test; namespaces.close then kills the shims left.
func (l *Lab) killContainers(t testing.TB, n *node) {
	out, err := l.ctr(n, "tasks", "list", "--quiet")
	if err != nil {
		t.Logf("kubeletlab: cleanup: %v", err)
		return
	}
	for _, id := range strings.Fields(out) {
		if _, err := l.ctr(n, "tasks", "kill", "--all", "--signal", "SIGKILL", id); err != nil {
			t.Logf("kubeletlab: cleanup: %v", err)
		}
	}
	for _, id := range strings.Fields(out) {
		// Most are gone once killed: "not found" is success here, and so
		// is a shim that exited with its pod's last task ("ttrpc: closed").
		if _, err := l.ctr(n, "tasks", "delete", "--force", id); err != nil && !gone(err) {
			t.Logf("kubeletlab: cleanup: %v", err)
		}
	}
	containers, _ := l.ctr(n, "containers", "list", "--quiet")
	removeCgroups(strings.Fields(containers))
}

func gone(err error) bool {
	return strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "ttrpc: closed")
}

// removeCgroups removes the cgroups runc made for the containers ids:
// with no pod cgroups (cgroupsPerQOS: false) containerd puts each under
// /k8s.io/<id> in every cgroup v1 hierarchy, and nothing removes them.
// rmdir removes only empty cgroups, so nothing running is touched.
func removeCgroups(ids []string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/k8s.io")
	for _, root := range roots {
		for _, id := range ids {
			os.Remove(filepath.Join(root, id))
		}
		os.Remove(root)
	}
}

// startControllers starts kube-controller-manager (it allocates the
// node's pod CIDR, runs the DaemonSet, Deployment, EndpointSlice and
// service account controllers) and kube-scheduler, both as the admin user.
func (l *Lab) startControllers(t testing.TB) {
	t.Helper()
	kubeconfig := l.AdminKubeconfig
	l.start(t, l.nodes[0], "kube-controller-manager", filepath.Join(l.bin, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=10257",
		"--allocate-node-cidrs",
		"--cluster-cidr="+PodCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+testcluster.ServiceCIDR,
		"--service-account-private-key-file="+l.ServiceAccountKey(),
		"--root-ca-file="+l.CAFile(),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--node-monitor-grace-period=20s",
	)
	l.start(t, l.nodes[0], "kube-scheduler", filepath.Join(l.bin, "kube-scheduler"),
		"--kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=10259",
		"--leader-elect=false",
	)
}

// startKubelet starts kubelet as node n, on its address, with clusterDNS
// as the pods' nameserver unless it is empty. The API server is the first
// node's address (the AdminKubeconfig's server), which the other nodes
// reach through the bridge.
func (l *Lab) startKubelet(t testing.TB, n *node, clusterDNS string) {
	t.Helper()
	resolv := filepath.Join(n.dir, "resolv.conf")
	config := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(resolv, []byte(nodeResolvConf(clusterDNS)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if err := os.WriteFile(config, []byte(kubeletConfig(resolv, n.ip)+kubeletDNS(clusterDNS)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.start(t, n, "kubelet", filepath.Join(l.bin, "kubelet"),
		"--config="+config,
		"--kubeconfig="+l.AdminKubeconfig,
		"--hostname-override="+n.name,
		"--node-ip="+n.ip,
		"--root-dir=/var/lib/kubelet",
		"--v=2",
	)
}

// Kubectl runs the built kubectl as the admin user, in the node's
// namespaces, and returns its combined output.
func (l *Lab) Kubectl(args ...string) (string, error) {
	return l.KubectlInput("", args...)
}

// KubectlInput is Kubectl with stdin.
func (l *Lab) KubectlInput(stdin string, args ...string) (string, error) {
	args = append([]string{"--kubeconfig=" + l.AdminKubeconfig}, args...)
	cmd := l.Command(filepath.Join(l.bin, "kubectl"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args[1:], " "), err, out)
	}
	return string(out), nil
}

// KubectlCommand returns the kubectl command as Kubectl runs it, for a
// caller that reads its output as it comes.
func (l *Lab) KubectlCommand(args ...string) *exec.Cmd {
	args = append([]string{"--kubeconfig=" + l.AdminKubeconfig}, args...)
	return l.Command(filepath.Join(l.bin, "kubectl"), args...)
}

// Command returns a command running in the first node's network and mount
// namespaces (hostNetwork pods see the same network).
func (l *Lab) Command(name string, args ...string) *exec.Cmd { return l.NodeCommand(0, name, args...) }

// NodeCommand returns a command running in node i's network and mount
// namespaces (0 is the first node).
func (l *Lab) NodeCommand(i int, name string, args ...string) *exec.Cmd {
	return l.nodes[i].ns.Command(name, args...)
}

// OutsideCommand returns a command running in the outside namespace.
func (l *Lab) OutsideCommand(name string, args ...string) *exec.Cmd {
	return l.net.OutsideCommand(name, args...)
}
