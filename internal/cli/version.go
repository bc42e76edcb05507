package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X ...cli.version=v1.2.3 ...".
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

func newVersionCommand(c *common) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.streams.Out, "kubectl-svcproxy %s (commit %s, built %s, %s, kube-proxy compatibility v1.37)\n",
				version, commit, date, runtime.Version())
			return err
		},
	}
}
