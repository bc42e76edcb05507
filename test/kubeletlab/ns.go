package kubeletlab

import (
	"bufio"
	"context"
	"fmt"
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

// namespaces is a node's network namespace and the private mount
// namespace every process of the node shares, held open by a sleeping
// process.
type namespaces struct {
	name   string // the network namespace's name under /run/netns
	handle netns.NsHandle
	holder *exec.Cmd
}

// newNamespaces creates node i's network namespace, attached to the lab's
// bridge, and its private mount namespace with its directories under dir,
// all removed when the test ends.
func newNamespaces(t testing.TB, lan *network, prefix string, i int, dir string) *namespaces {
	t.Helper()
	n := &namespaces{name: fmt.Sprintf("%snode%d", prefix, i+1), handle: netns.None()}
	t.Cleanup(n.close)
	ipSteps(t, []string{"netns", "add", n.name})
	lan.attach(t, n.name, fmt.Sprintf("node%d", i+1), nodeIP(i))
	var err error
	if n.handle, err = netns.GetFromName(n.name); err != nil {
		t.Fatalf("kubeletlab: %v", err)
	}
	// Replies of a pod to another pod of the bridge that reached it
	// through a ClusterIP must see the proxy's conntrack entries.
	if err := n.Sysctl("net.ipv4.ip_forward", "1", "net.bridge.bridge-nf-call-iptables", "1"); err != nil {
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
	cmd := exec.Command("nsenter", "--net=/run/netns/"+n.name, "--",
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

// Dial connects from inside the node's network namespace.
func (n *namespaces) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := nsthread.Do(n.handle, func() error {
		var err error
		conn, err = (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Sysctl writes key=value pairs inside the node's network namespace.
func (n *namespaces) Sysctl(kv ...string) error { return sysctl(n.handle, kv...) }

// close ends the holder (the mount namespace goes with the last process
// in it) and deletes the network namespace.
func (n *namespaces) close() {
	if n.holder != nil && n.holder.Process != nil {
		n.killMountNS()
		n.holder.Process.Kill()
		n.holder.Wait()
	}
	if n.handle.IsOpen() {
		n.handle.Close()
	}
	exec.Command("ip", "netns", "delete", n.name).Run()
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
