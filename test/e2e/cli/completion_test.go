package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionThroughKubectl runs deploy/kubectl_complete-svcproxy, as
// kubectl runs it, with the built binary on PATH.
func TestCompletionThroughKubectl(t *testing.T) {
	bin := binary(t)
	script, err := filepath.Abs("../../../deploy/kubectl_complete-svcproxy")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "plan", "--mode", "")
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	if want := "iptables\nnftables\nipvs\nuserspace\n:4\n"; !strings.HasPrefix(string(out), want) {
		t.Errorf("%s plan --mode '': %q, want %q", script, out, want)
	}
}
