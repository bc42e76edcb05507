package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// plan --against as CI runs it: the binary, two files, no node and no
// privileges. The exit code is the contract: 0 identical, 1 changes, 2
// an error; `diff` is the same command.
func TestPlanAgainstExitCodes(t *testing.T) {
	t.Parallel()
	old := filepath.Join(repo.MustRoot(t), "testdata", "golden", "review", "example-old.yaml")
	for _, c := range []struct {
		args   []string
		code   int
		stdout string // a line the output must hold
		stderr string
	}{
		{[]string{"plan", "-f", old, "--against", old, "--node-name=node1"}, ExitOK, "No changes: " + old + " renders the same iptables rules for node node1 as " + old + ".", ""},
		{[]string{"diff", "-f", old, "--against", old, "--all-nodes", "--mode=nftables"}, ExitOK, "1 node in 1 group.", ""},
		{[]string{"plan", "--example", "--against", old}, ExitChanges, "Plan: chains +5 ~4 -2, rules +20 -7", ""},
		{[]string{"diff", "--example", "--against", old, "--mode=ipvs"}, ExitChanges, "@@ ipvs -t 10.96.0.50:80: stale virtual server @@", ""},
		{[]string{"diff", "--example", "--against", old, "-o", "markdown"}, ExitChanges, "| `shop/cart` | added | rules +14 -0 |", ""},
		{[]string{"diff", "--example", "--against", old, "--all-nodes"}, ExitChanges, "=== node node1", ""},
		{[]string{"diff", "--example", "--all-nodes"}, ExitError, "", "error: --all-nodes needs --against OLD"},
		{[]string{"plan", "--example", "--against", old, "--out", filepath.Join(t.TempDir(), "p.json")}, ExitError, "", "error: --out saves a plan"},
		{[]string{"diff", "--example", "--against", filepath.Join(t.TempDir(), "missing.yaml")}, ExitError, "", "missing.yaml"},
	} {
		stdout, stderr, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, want %d with %q on stdout and %q on stderr\nstdout:\n%s\nstderr:\n%s",
				c.args, code, c.code, c.stdout, c.stderr, stdout, stderr)
		}
	}
}

// diff is plan under kubectl's name, and help says so.
func TestDiffIsPlan(t *testing.T) {
	t.Parallel()
	help, _, code := run(t, "", "diff", "--help")
	if code != ExitOK || !strings.Contains(help, "Aliases:\n  plan, diff\n") || !strings.Contains(help, "--against") {
		t.Errorf("diff --help: exit %d:\n%s", code, help)
	}
}
