// Command kubectl-svcproxy is the kubectl plugin "kubectl svcproxy".
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/cli"
)

func main() {
	cli.SetStartupHeapFloor()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := cli.NewRootCommand(streams).Execute(); err != nil {
		if cli.ExitCode(err) != cli.ExitChanges {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}
