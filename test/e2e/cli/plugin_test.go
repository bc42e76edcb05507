package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestKubectlPluginDiscovery puts the binary on PATH and runs it as
// `kubectl svcproxy`, the way users call it.
func TestKubectlPluginDiscovery(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		testenv.SkipOrFail(t, "kubectl not on PATH")
	}
	bin := t.TempDir()
	if err := os.Symlink(binary(t), filepath.Join(bin, "kubectl-svcproxy")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectl, "svcproxy", "render", "--example", "--family=ipv4")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl svcproxy: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "*nat") {
		t.Errorf("kubectl svcproxy render printed no nat table:\n%s", out)
	}
	help, err := exec.Command(filepath.Join(bin, "kubectl-svcproxy"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "kubectl svcproxy") {
		t.Errorf("--help: %v\n%s", err, help)
	}
}
