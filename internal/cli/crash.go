package cli

import (
	"fmt"
	"io"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/panicsite"
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
			fmt.Fprintf(errOut, "error: internal error, a bug in kubectl-svcproxy (please report it with the command line): %v%s\n", r, panicsite.Of())
			code = ExitError
		}
	}()
	err := cmd.Execute()
	if err != nil && ExitCode(err) != ExitChanges {
		fmt.Fprintln(errOut, "error:", err)
	}
	return ExitCode(err)
}
