// Package conntrackvm proves, in the test VM (test/vmtest), whose kernel
// and initial network namespace are its own, that the conntrack settings
// land as kube-proxy sets them: the table size and hash size, which only
// the initial namespace may change, and the timeouts. The guest runs the
// tool's binary as init's child, in that initial namespace.
package conntrackvm

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

func TestMain(m *testing.M) { vmtest.Main(m) }

// guestTool is where the host puts the binary; not under /tmp or /run,
// which the guest's init mounts over.
const guestTool = "/conntrackvm/kubectl-svcproxy"

// TestConntrackInVM boots the VM with the tool; the guest runs
// TestGuestConntrack*.
func TestConntrackInVM(t *testing.T) {
	files := map[string]string{guestTool: toolbin.Path(t)}
	vmtest.RunWith(t, ".", files, "-test.run", "^TestGuestConntrack", "-test.v")
}
