package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// A run without CAP_NET_ADMIN says what it needs, before iptables can
// answer "you must be root" from a backend it fell back to.
func TestKernelCommandsWithoutNetAdmin(t *testing.T) {
	testenv.RequireRoot(t) // to run the binary as another user
	dir, err := os.MkdirTemp("", "svcproxy-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "kubectl-svcproxy")
	data, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lockFile := "--lock-file=" + filepath.Join(dir, "lock")
	for _, args := range [][]string{
		{"plan", "--example", "--state-dir="},
		{"apply", "--example", "--state-dir=", lockFile},
		{"apply", "--example", "--mode=nftables", "--state-dir=", lockFile},
		{"reset", "--state-dir=", lockFile},
	} {
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		r := runCmd(cmd)
		if r.code != ExitError || !strings.Contains(r.stderr, "CAP_NET_ADMIN") || strings.Contains(r.stderr, "must be root") {
			t.Errorf("as nobody: want exit %d naming CAP_NET_ADMIN:\n%s", ExitError, r)
		}
	}
}
