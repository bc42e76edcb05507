package cli

import (
	"context"
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

// VersionOptions are the options of `version`: it has none.
type VersionOptions struct {
	*common
}

func newVersionCommand(c *common) *cobra.Command {
	o := &VersionOptions{common: c}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
}

// Complete has nothing to fill in.
func (o *VersionOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate has nothing to check.
func (o *VersionOptions) Validate() error { return nil }

// Run prints the version.
func (o *VersionOptions) Run(context.Context) error {
	_, err := fmt.Fprintf(o.streams.Out, "kubectl-svcproxy %s (commit %s, built %s, %s, kube-proxy compatibility v1.37)\n",
		version, commit, date, runtime.Version())
	return err
}
