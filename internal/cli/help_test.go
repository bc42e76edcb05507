package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestHelpGroupsAndWraps: kubectl's connection flags are listed apart from
// the proxy's own, and on a terminal of 80 columns no flag line of any
// command's help is wider (but for one word that does not fit).
func TestHelpGroupsAndWraps(t *testing.T) {
	saved := helpWidth
	helpWidth = func(*cobra.Command) int { return 80 }
	t.Cleanup(func() { helpWidth = saved })
	for _, name := range []string{"render", "plan", "apply", "trace", "snapshot", "proxy", "reset", "version"} {
		out, _, code := run(t, "", name, "--help")
		if code != ExitOK {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		flags := out[strings.Index(out, "\nFlags:\n"):]
		for l := range strings.Lines(flags) {
			// A word longer than what is left of the line is not broken.
			if n := len([]rune(strings.TrimRight(l, "\n"))); n > 80 && len(strings.Fields(l)) > 1 {
				t.Errorf("%s --help: a flag line of %d columns on an 80-column terminal: %q", name, n, l)
			}
		}
		own, conn, found := strings.Cut(flags, "\n"+connectionGroup+":\n")
		takesConnection := name != "reset" && name != "version"
		if found != takesConnection {
			t.Errorf("%s --help: a %q section: %v, want %v", name, connectionGroup, found, takesConnection)
			continue
		}
		if !found {
			continue
		}
		for _, f := range []string{"--kubeconfig", "--context", "--token", "--server", "--as-group"} {
			if strings.Contains(own, f+" ") || !strings.Contains(conn, f+" ") {
				t.Errorf("%s --help: %s is not in the connection section alone", name, f)
			}
		}
		if !strings.Contains(own, "--node-name") {
			t.Errorf("%s --help: --node-name left the command's own flags", name)
		}
	}
}

// TestNoEffectFlagsWarn: a flag a command accepts only so that one set of
// flags serves every command says, when given, in one line on stderr,
// that it does nothing there.
func TestNoEffectFlagsWarn(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"reset", []string{"--node-name=worker-1"}, "warning: --node-name has no effect on reset: it removes what the tool owns whatever the node\n"},
		{"plan", []string{"--lock-file=/run/x.lock", "--lock-wait=5s"}, "warning: --lock-file has no effect on plan: it takes no lock\nwarning: --lock-wait has no effect on plan: it takes no lock\n"},
		{"plan", []string{"--mode=nftables"}, ""},
		{"apply", []string{"--lock-file=/run/x.lock"}, ""},
	} {
		root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
		cmd, _, err := root.Find([]string{tc.cmd})
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%s %v: %v", tc.cmd, tc.args, err)
		}
		var errOut strings.Builder
		cmd.SetErr(&errOut)
		warnNoEffect(cmd)
		if errOut.String() != tc.want {
			t.Errorf("%s %v: stderr %q, want %q", tc.cmd, tc.args, errOut.String(), tc.want)
		}
	}
}
