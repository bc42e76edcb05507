package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// needsLinuxAnnotation marks the commands that read or change this node's
// kernel (iptables, nf_tables, IPVS, conntrack, network namespaces): they
// work on Linux only. Its value says why, for the error elsewhere. The
// commands without it work from files and the API server anywhere:
// render, snapshot, version and completion.
const needsLinuxAnnotation = "kubectl-svcproxy/needs-linux"

// offNodeFlagAnnotation names a flag of a command that needs Linux which,
// when given, makes it read nothing from the kernel: plan --against
// renders both sides from files, and runs anywhere.
const offNodeFlagAnnotation = "kubectl-svcproxy/off-node-flag"

// markNeedsLinux marks cmd as one that needs Linux's kernel, for why.
func markNeedsLinux(cmd *cobra.Command, why string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[needsLinuxAnnotation] = why
}

// checkPlatform refuses a command that needs Linux on another system
// (goos as runtime.GOOS spells it), before it reads a flag's value or
// touches anything: one line, exit code 2.
func checkPlatform(goos string, cmd *cobra.Command) error {
	why, ok := cmd.Annotations[needsLinuxAnnotation]
	if !ok || goos == "linux" {
		return nil
	}
	if name := cmd.Annotations[offNodeFlagAnnotation]; name != "" {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return nil
		}
	}
	return fmt.Errorf("%s: needs Linux: %s; render, snapshot and plan --against work here", cmd.CommandPath(), why)
}

// platform is the system the commands run on: runtime.GOOS unless a test
// says otherwise.
func (c *common) platform() string {
	if c.goos != "" {
		return c.goos
	}
	return runtime.GOOS
}
