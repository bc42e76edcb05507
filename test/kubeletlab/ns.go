package kubeletlab

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nsthread"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// Addresses of the lab. The node's eth0 and the outside namespace's eth0
// are the two ends of one veth; the node routes everything else to outside,
// which forwards nothing.
const (
	NodeIP    = "10.77.0.10"
	OutsideIP = "10.77.0.1"
	// PodCIDR is the cluster's pod range (--cluster-cidr); the node gets
	// its first /24, NodePodCIDR, from kube-controller-manager.
	PodCIDR     = "10.244.0.0/16"
	NodePodCIDR = "10.244.0.0/24"
)

// privateDirs are the host paths that the node's private mount namespace
// replaces with empty directories of the test: everything kubelet,
// containerd, runc and the CNI plugins write, and the DaemonSet's
// hostPath volumes (/run/xtables.lock, /run/kubectl-svcproxy). Each must
// exist on every machine, being a mount point: the CNI configuration is
// under /var/lib (cniConfDir), not /etc/cni, which a fresh machine lacks.
var privateDirs = []string{"/run", "/var/lib", "/var/log"}

// cniConfDir is containerd's CNI configuration directory in the node's
// mount namespace, private as part of /var/lib.
const cniConfDir = "/var/lib/kubeletlab/cni/net.d"

// kernelTunables are the machine-wide sysctls that kubelet sets to these
// values when they differ (container_manager_linux.go, setupKernelTunables)
// or, with protectKernelDefaults, refuses to start. They are not per
// network namespace: writing them would change the host (kernel.panic,
// kernel.panic_on_oops, vm.overcommit_memory). In the node's mount
// namespace each is a read-only file that already holds kubelet's value.
var kernelTunables = []struct{ path, value string }{
	{"vm/overcommit_memory", "1"},
	{"vm/panic_on_oom", "0"},
	{"kernel/panic", "10"},
	{"kernel/panic_on_oops", "1"},
	{"kernel/keys/root_maxkeys", "1000000"},
	{"kernel/keys/root_maxbytes", "25000000"},
}

// namespaces is the node's network namespace and the private mount
// namespace every node process shares, held open by a sleeping process,
// plus the outside network namespace.
type namespaces struct {
	node, outside string // names under /run/netns
	nodeNS        netns.NsHandle
	holder        *exec.Cmd
}

// newNamespaces creates the network namespaces, their veth and addresses,
// and the private mount namespace, all removed when the test ends.
func newNamespaces(t testing.TB, dir string) *namespaces {
	t.Helper()
	prefix := fmt.Sprintf("%s%d-%x-", netlab.NamePrefix, os.Getpid(), rand.Uint32())
	n := &namespaces{node: prefix + "node", outside: prefix + "out", nodeNS: netns.None()}
	t.Cleanup(n.close)
	steps := [][]string{
		{"netns", "add", n.node},
		{"netns", "add", n.outside},
		{"-n", n.node, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", n.outside},
		{"-n", n.node, "addr", "add", NodeIP + "/24", "dev", "eth0"},
		{"-n", n.outside, "addr", "add", OutsideIP + "/24", "dev", "eth0"},
		{"-n", n.node, "link", "set", "lo", "up"},
		{"-n", n.node, "link", "set", "eth0", "up"},
		{"-n", n.outside, "link", "set", "lo", "up"},
		{"-n", n.outside, "link", "set", "eth0", "up"},
		{"-n", n.node, "route", "add", "default", "via", OutsideIP},
		{"-n", n.outside, "route", "add", PodCIDR, "via", NodeIP},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			t.Fatalf("kubeletlab: ip %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	var err error
	if n.nodeNS, err = netns.GetFromName(n.node); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	if err := n.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	n.startHolder(t, dir)
	return n
}

// startHolder starts the process that holds the node's private mount
// namespace: inside the node's network namespace, it replaces the
// privateDirs with directories under dir, and overlays /usr/lib (/lib is
// a link to it here) so that the DaemonSet's /lib/modules, which the
// runtime creates when missing, appears only there, and masks the
// kernelTunables.
func (n *namespaces) startHolder(t testing.TB, dir string) {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -e\n")
	for _, p := range privateDirs {
		private := filepath.Join(dir, "root", p)
		if err := os.MkdirAll(private, 0o755); err != nil {
			t.Fatalf("kubeletlab: %v", err)
		}
		fmt.Fprintf(&script, "mount --bind %s %s\n", private, p)
	}
	upper, work := filepath.Join(dir, "usr-lib", "upper"), filepath.Join(dir, "usr-lib", "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("kubeletlab: %v", err)
		}
	}
	fmt.Fprintf(&script, "mount -t overlay overlay -o lowerdir=/usr/lib,upperdir=%s,workdir=%s /usr/lib\n", upper, work)
	for _, k := range kernelTunables {
		file := filepath.Join(dir, "sysctl-"+strings.ReplaceAll(k.path, "/", "-"))
		if err := os.WriteFile(file, []byte(k.value+"\n"), 0o444); err != nil {
			t.Fatalf("kubeletlab: %v", err)
		}
		fmt.Fprintf(&script, "mount --bind -o ro %s /proc/sys/%s\n", file, k.path)
	}
	script.WriteString("mkdir -p /run/netns /usr/lib/modules\necho ready\nexec sleep infinity\n")
	cmd := exec.Command("nsenter", "--net=/run/netns/"+n.node, "--",
		"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("kubeletlab: mount namespace: %v", err)
	}
	n.holder = cmd
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		cmd.Wait()
		t.Fatalf("kubeletlab: private mount namespace: %s", stderr.String())
	}
}

// Command returns a command that runs name in the node's network and
// mount namespaces. It dies with the test process.
func (n *namespaces) Command(name string, args ...string) *exec.Cmd {
	pid := strconv.Itoa(n.holder.Process.Pid)
	cmd := exec.Command("nsenter", append([]string{"--target", pid, "--mount", "--net", "--", name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// OutsideCommand returns a command that runs name in the outside network
// namespace (and the host's mount namespace).
func (n *namespaces) OutsideCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.outside, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Dial connects from inside the node's network namespace.
func (n *namespaces) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := nsthread.Do(n.nodeNS, func() error {
		var err error
		conn, err = (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Sysctl writes key=value pairs inside the node's network namespace.
func (n *namespaces) Sysctl(kv ...string) error {
	return nsthread.Do(n.nodeNS, func() error {
		for i := 0; i+1 < len(kv); i += 2 {
			path := "/proc/sys/" + strings.ReplaceAll(kv[i], ".", "/")
			if err := os.WriteFile(path, []byte(kv[i+1]), 0); err != nil {
				return fmt.Errorf("sysctl %s=%s: %w", kv[i], kv[i+1], err)
			}
		}
		return nil
	})
}

// close ends the holder (the mount namespace goes with the last process
// in it) and deletes both network namespaces.
func (n *namespaces) close() {
	if n.holder != nil && n.holder.Process != nil {
		n.killMountNS()
		n.holder.Process.Kill()
		n.holder.Wait()
	}
	if n.nodeNS.IsOpen() {
		n.nodeNS.Close()
	}
	for _, name := range []string{n.node, n.outside} {
		exec.Command("ip", "netns", "delete", name).Run()
	}
}

// killMountNS kills, by PID, every process left in the node's private mount
// namespace: only the lab's processes can be there (containerd's shims,
// which outlive containerd, and anything a failed cleanup left).
func (n *namespaces) killMountNS() {
	holder := n.holder.Process.Pid
	mnt, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder))
	if err != nil {
		return
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == holder || pid == os.Getpid() {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && link == mnt {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
