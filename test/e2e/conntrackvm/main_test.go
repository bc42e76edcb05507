// Package conntrackvm proves, in the test VM (test/vmtest), whose kernel
// and initial network namespace are its own, that the conntrack settings
// land as kube-proxy sets them: the table size and hash size, which only
// the initial namespace may change, and the timeouts. The guest runs the
// tool's binary as init's child, in that initial namespace.
package conntrackvm

import (
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

func TestMain(m *testing.M) { vmtest.Main(m) }

// Where the host puts the guest's inputs; not under /tmp or /run, which
// the guest's init mounts over.
const (
	guestTool       = "/conntrackvm/kubectl-svcproxy"
	guestKubeProxy  = "/conntrackvm/kube-proxy"
	guestKubeconfig = "/conntrackvm/admin.kubeconfig"
)

// guestNode is the Node kube-proxy runs for in the guest.
const guestNode = "conntrackvm"

// TestConntrackInVM boots the VM with the tool; the guest runs
// TestGuestConntrack*.
func TestConntrackInVM(t *testing.T) {
	files := map[string]string{guestTool: toolbin.Path(t)}
	vmtest.RunWith(t, ".", files, "-test.run", "^TestGuestConntrackLands$", "-test.v")
}

// TestConntrackKubeProxyInVM starts the test API server with the guest's
// Node, and boots the VM with kube-proxy v1.37.2 and the tool; the guest
// runs each with the same conntrack flags from the same starting values
// and compares what they leave in the kernel.
func TestConntrackKubeProxyInVM(t *testing.T) {
	if vmtest.InGuest() {
		t.Skip("vmtest: already inside the VM")
	}
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and the VM with kube-proxy (-short)")
	}
	files := map[string]string{guestTool: toolbin.Path(t), guestKubeProxy: testcluster.KubeProxy(t)}
	c := testcluster.Start(t)
	c.Apply(t, "apiVersion: v1\nkind: Node\nmetadata:\n  name: "+guestNode+"\n")
	files[guestKubeconfig] = testcluster.GuestKubeconfig(t, c.AdminKubeconfig, vmtest.HostLoopback)
	opts := vmtest.Options{Files: files, Memory: "1G", UserNet: true, Timeout: 8 * time.Minute}
	vmtest.RunOpts(t, ".", opts, "-test.run", "^TestGuestConntrackAsKubeProxy$", "-test.v")
}
