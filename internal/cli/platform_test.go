package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runOn runs the CLI as run does, as if on the system goos.
func runOn(t *testing.T, goos string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runOnWithStdin(t, goos, "", args...)
}

// runOnWithStdin is runOn with stdin as the standard input.
func runOnWithStdin(t *testing.T, goos, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &common{streams: genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, goos: goos}
	cmd := newRootCommand(c)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil && ExitCode(err) != ExitChanges {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), ExitCode(err)
}

// Exactly the commands that read or change the kernel need Linux; the
// others work from files and the API server anywhere.
func TestCommandsThatNeedLinux(t *testing.T) {
	root := newRootCommand(&common{streams: genericiooptions.NewTestIOStreamsDiscard()})
	var marked []string
	for _, cmd := range root.Commands() {
		for _, goos := range []string{"linux", "darwin", "windows"} {
			err := checkPlatform(goos, cmd)
			_, needs := cmd.Annotations[needsLinuxAnnotation]
			switch {
			case goos == "linux" && err != nil:
				t.Errorf("%s on linux: %v", cmd.Name(), err)
			case goos != "linux" && needs && err == nil:
				t.Errorf("%s on %s: no error", cmd.Name(), goos)
			case !needs && err != nil:
				t.Errorf("%s on %s: %v", cmd.Name(), goos, err)
			}
		}
		if _, needs := cmd.Annotations[needsLinuxAnnotation]; needs {
			marked = append(marked, cmd.Name())
		}
	}
	slices.Sort(marked)
	if want := []string{"apply", "plan", "proxy", "reset"}; !slices.Equal(marked, want) {
		t.Errorf("commands that need Linux: %v, want %v", marked, want)
	}
}

// On another system a kernel command stops at once with one line and exit
// code 2, whatever its flags, while render still works.
func TestKernelCommandsRefuseElsewhere(t *testing.T) {
	for _, c := range []struct {
		goos string
		args []string
		want string
	}{
		{"darwin", []string{"plan", "--example", "--node-name=node-a"}, "error: kubectl svcproxy plan: needs Linux: it reads this node's kernel rules; render, snapshot and plan --against work here\n"},
		{"windows", []string{"apply", "--example", "--dry-run"}, "error: kubectl svcproxy apply: needs Linux: it changes this node's kernel rules; render, snapshot and plan --against work here\n"},
		{"darwin", []string{"reset", "--mode=nftables"}, "error: kubectl svcproxy reset: needs Linux: it removes this node's kernel rules; render, snapshot and plan --against work here\n"},
		{"windows", []string{"proxy", "--example"}, "error: kubectl svcproxy proxy: needs Linux: it proxies Services through this node's kernel rules; render, snapshot and plan --against work here\n"},
	} {
		stdout, stderr, code := runOn(t, c.goos, c.args...)
		if code != ExitError || stdout != "" || stderr != c.want {
			t.Errorf("%s %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.goos, c.args, code, stdout, stderr, c.want)
		}
	}
	for _, goos := range []string{"darwin", "windows"} {
		stdout, stderr, code := runOn(t, goos, "render", "--example", "--family=ipv4")
		if code != 0 || !strings.Contains(stdout, "KUBE-SERVICES") {
			t.Errorf("render on %s: exit %d, stderr %q", goos, code, stderr)
		}
	}
}
