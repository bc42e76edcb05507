package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Main runs the root command and returns the process's exit code, having
// printed the error, if any, to streams.ErrOut.
func Main(streams genericiooptions.IOStreams) int {
	return execute(NewRootCommand(streams), streams.ErrOut)
}

// execute runs cmd. A panic on the command's goroutine (a bug: no input
// should cause one) is an error that says so and where, with exit code 2,
// rather than a Go runtime trace. Memory that runs out is no panic and
// cannot be recovered: the limits on input files are what prevent that
// (docs/INPUT.md).
func execute(cmd *cobra.Command, errOut io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(errOut, "error: internal error, a bug in kubectl-svcproxy (please report it with the command line): %v%s\n", r, panicSite())
			code = ExitError
		}
	}()
	err := cmd.Execute()
	if err != nil && ExitCode(err) != ExitChanges {
		fmt.Fprintln(errOut, "error:", err)
	}
	return ExitCode(err)
}

// panicSite is " at function (file:line)" of the code that panicked, for
// the report; called from the deferred recover, while the panicking
// frames are still on the stack.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic" || f.Function == "runtime.panicmem" || strings.HasPrefix(f.Function, "runtime.panic"):
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return fmt.Sprintf(" at %s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}
