package kubeletlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// start starts bin with args in the node's namespaces, its output going to
// <name>.log in the lab's directory, and stops it when the test ends.
func (l *Lab) start(t testing.TB, name, bin string, args ...string) {
	t.Helper()
	cmd := l.ns.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+l.crun+":"+os.Getenv("PATH"))
	p, err := testcluster.StartCommand(name, cmd, filepath.Join(l.dir, name+".log"))
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.procs[name] = p
	t.Cleanup(p.Stop)
}

// Log returns the last n lines of a node process's log ("kubelet",
// "containerd", "kube-controller-manager", "kube-scheduler").
func (l *Lab) Log(name string, n int) string {
	if p := l.procs[name]; p != nil {
		return p.Tail(n)
	}
	return "no process " + name
}

// startContainerd starts containerd with the CNI configuration and waits
// for its socket. Its cleanup first kills every container it runs, whose
// shims would outlive it.
func (l *Lab) startContainerd(t testing.TB, sandboxImage string) {
	t.Helper()
	config := filepath.Join(l.dir, "containerd.toml")
	if err := os.WriteFile(config, []byte(containerdConfig(sandboxImage)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.write(t, cniConfDir+"/10-kubeletlab.conflist", cniConfig())
	l.start(t, "containerd", filepath.Join(l.crun, "containerd"), "--config", config)
	t.Cleanup(func() { l.killContainers(t) })
	err := l.poll(t, time.Minute, func(context.Context) error {
		_, err := l.Ctr("version")
		return err
	})
	if err != nil {
		t.Fatalf("kubeletlab: containerd: %v", err)
	}
}

// Ctr runs containerd's ctr in the node's namespaces, in the CRI's
// namespace k8s.io, and returns its stdout (its stderr holds warnings, such
// as containerd 2's about cgroup v1).
func (l *Lab) Ctr(args ...string) (string, error) {
	args = append([]string{"--address", containerdSocket, "--namespace", "k8s.io"}, args...)
	cmd := l.ns.Command(filepath.Join(l.crun, "ctr"), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args[4:], " "), err, stderr.String())
	}
	return string(out), nil
}

// Import imports an OCI image archive into containerd, as
// `ctr -n k8s.io images import` does by hand, and returns the names of the
// images it added.
func (l *Lab) Import(t testing.TB, archive string) []string {
	t.Helper()
	before, err := l.Ctr("images", "list", "--quiet")
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if _, err := l.Ctr("images", "import", archive); err != nil {
		t.Fatalf("kubeletlab: import %s: %v", archive, err)
	}
	after, err := l.Ctr("images", "list", "--quiet")
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	var added []string
	for _, name := range strings.Fields(after) {
		if !slices.Contains(strings.Fields(before), name) && !strings.HasPrefix(name, "sha256:") {
			added = append(added, name)
		}
	}
	t.Logf("kubeletlab: imported %s: %v", filepath.Base(archive), added)
	return added
}

// killContainers kills every task of containerd (pods' processes and
// pause containers) and deletes them, so that no container outlives the
// test; namespaces.close then kills the shims left.
func (l *Lab) killContainers(t testing.TB) {
	out, err := l.Ctr("tasks", "list", "--quiet")
	if err != nil {
		t.Logf("kubeletlab: cleanup: %v", err)
		return
	}
	for _, id := range strings.Fields(out) {
		if _, err := l.Ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id); err != nil {
			t.Logf("kubeletlab: cleanup: %v", err)
		}
	}
	for _, id := range strings.Fields(out) {
		// Most are gone once killed: "not found" is success here.
		if _, err := l.Ctr("tasks", "delete", "--force", id); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Logf("kubeletlab: cleanup: %v", err)
		}
	}
	containers, _ := l.Ctr("containers", "list", "--quiet")
	removeCgroups(strings.Fields(containers))
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
	l.start(t, "kube-controller-manager", filepath.Join(l.bin, "kube-controller-manager"),
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
	l.start(t, "kube-scheduler", filepath.Join(l.bin, "kube-scheduler"),
		"--kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=10259",
		"--leader-elect=false",
	)
}

// startKubelet starts kubelet as the node NodeName on NodeIP, with
// clusterDNS as the pods' nameserver unless it is empty.
func (l *Lab) startKubelet(t testing.TB, clusterDNS string) {
	t.Helper()
	resolv := filepath.Join(l.dir, "resolv.conf")
	config := filepath.Join(l.dir, "kubelet.yaml")
	if err := os.WriteFile(resolv, []byte(nodeResolvConf(clusterDNS)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if err := os.WriteFile(config, []byte(kubeletConfig(resolv)+kubeletDNS(clusterDNS)), 0o644); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	l.start(t, "kubelet", filepath.Join(l.bin, "kubelet"),
		"--config="+config,
		"--kubeconfig="+l.AdminKubeconfig,
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
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
	cmd := l.ns.Command(filepath.Join(l.bin, "kubectl"), args...)
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
	return l.ns.Command(filepath.Join(l.bin, "kubectl"), args...)
}

// Command returns a command running in the node's network and mount
// namespaces (hostNetwork pods see the same network).
func (l *Lab) Command(name string, args ...string) *exec.Cmd { return l.ns.Command(name, args...) }

// OutsideCommand returns a command running in the outside namespace.
func (l *Lab) OutsideCommand(name string, args ...string) *exec.Cmd {
	return l.ns.OutsideCommand(name, args...)
}
