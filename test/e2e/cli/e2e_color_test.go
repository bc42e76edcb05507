package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// The SGR sequences the plan is coloured with: bold, green (an added
// line), and bold cyan (a file header).
const (
	sgrBold   = "\x1b[1m"
	sgrGreen  = "\x1b[32m"
	sgrHeader = "\x1b[1;36m"
)

// TestE2EColor runs plan and apply --dry-run on a node: colour with
// --color=always, none into a pipe or with --color=never, and on a
// terminal (script(1) gives the binary one) colour unless NO_COLOR is set.
func TestE2EColor(t *testing.T) {
	t.Parallel()
	testenv.RequireTools(t, "script")
	n := newE2ENode(t, "nft")
	green, header := sgrGreen+"+-A KUBE-SVC-", sgrHeader+"+++ desired IPv4"
	expect(t, n.run("plan", append(exampleArgs, "--color=always")...), ExitChanges, green, header, sgrBold+"Plan: ")
	expect(t, n.run("apply", append(exampleArgs, "--color=always", "--dry-run")...), ExitOK, sgrHeader+"# iptables-nft-restore")
	for _, args := range [][]string{exampleArgs, append(exampleArgs, "--color=never")} {
		if r := n.run("plan", args...); strings.Contains(r.stdout, "\x1b[") {
			t.Errorf("colour into a pipe:\n%s", r)
		}
	}
	if r := n.runEnv([]string{"NO_COLOR=1"}, "plan", append(exampleArgs, "--color=always")...); !strings.Contains(r.stdout, green) {
		t.Errorf("--color=always lost to NO_COLOR:\n%s", r)
	}
	onTerminal := func(env ...string) string {
		cmd := n.command(t.Context(), env, "plan", exampleArgs...)
		script := exec.CommandContext(t.Context(), "script", "-qec", shellQuote(cmd.Args), "/dev/null")
		script.Env = append(cmd.Env, "TERM=xterm")
		out, _ := script.Output()
		return string(out)
	}
	if out := onTerminal(); !strings.Contains(out, green) {
		t.Errorf("no colour on a terminal:\n%q", out)
	}
	if out := onTerminal("NO_COLOR=1"); strings.Contains(out, "\x1b[") || !strings.Contains(out, "+++ desired IPv4") {
		t.Errorf("colour on a terminal with NO_COLOR=1:\n%q", out)
	}
}

// shellQuote joins args into one sh command line.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
