// Command kubectl-svcproxy is the kubectl plugin "kubectl svcproxy".
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/cli"
)

func main() {
	cli.SetStartupHeapFloor()
	os.Exit(cli.Main(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
