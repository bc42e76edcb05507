package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A panic on the command's goroutine is a one-line error that names the
// panic and its place, with exit code 2: no Go runtime trace.
func TestExecutePanic(t *testing.T) {
	for name, body := range map[string]func(){
		"panic":   func() { panic("boom") },
		"nil map": func() { var m map[string]int; m["x"] = 1 },
		"index":   func() { s := []int{}; _ = s[len(s)+1-1] },
	} {
		var errOut bytes.Buffer
		cmd := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true, RunE: func(*cobra.Command, []string) error { body(); return nil }}
		cmd.SetArgs(nil)
		code := execute(cmd, &errOut)
		msg := errOut.String()
		if code != ExitError || !strings.HasPrefix(msg, "error: internal error, a bug in kubectl-svcproxy") ||
			!strings.Contains(msg, "crash_test.go:") || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "goroutine") {
			t.Errorf("%s: exit %d, %q; want exit 2 and one line naming crash_test.go", name, code, msg)
		}
	}
}

// Without a panic, execute prints the error, but not ErrChanges, and
// returns its exit code.
func TestExecuteExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{{nil, ExitOK, ""}, {ErrChanges, ExitChanges, ""}, {errors.New("bad"), ExitError, "error: bad\n"}} {
		var errOut bytes.Buffer
		cmd := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true, RunE: func(*cobra.Command, []string) error { return tc.err }}
		cmd.SetArgs(nil)
		if code := execute(cmd, &errOut); code != tc.code || errOut.String() != tc.out {
			t.Errorf("%v: exit %d, %q; want %d, %q", tc.err, code, errOut.String(), tc.code, tc.out)
		}
	}
}
