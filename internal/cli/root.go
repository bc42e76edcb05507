// Package cli is the command-line layer of kubectl-svcproxy: one file per
// subcommand, each an Options struct with Complete, Validate and Run, which
// runE calls in turn. The flag groups the commands share (inputFlags,
// ProxyFlags, kernelFlags, watchFlags) are registered only by the commands
// that use them. It is the only package that imports cobra and cli-runtime.
package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/clock"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// Exit codes, following kubectl diff.
const (
	ExitOK      = 0
	ExitChanges = 1
	ExitError   = 2
)

// ErrChanges is returned by plan-like commands when there are changes; it
// maps to exit code 1 and prints nothing more.
var ErrChanges = errors.New("changes pending")

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrChanges):
		return ExitChanges
	}
	return ExitError
}

// common holds what every subcommand shares. The flags are each
// command's own: every command registers the groups it uses.
type common struct {
	streams genericiooptions.IOStreams
	// warned holds the render warnings already printed, so that a
	// long-running command (apply --watch, proxy) reports a broken
	// Service once rather than on every sync, and whether the state
	// cache warning was (warnCache).
	warned sync.Map
	// The global flags (globalflags.go).
	color     string
	progress  bool
	logConfig *textlogger.Config
	// clock times the stages that --progress reports; nil is the real one.
	clock clock.PassiveClock
	// ticker paces --progress's lines for a stage under way; nil is the
	// real clock.
	ticker clock.WithTicker
	// goos is the system the commands believe they run on (platform.go);
	// empty is runtime.GOOS. Tests set it.
	goos string
	// builder, set by a command that renders again on every change (apply
	// --watch), rebuilds only the Services that changed since its last
	// render; nil builds every render anew.
	builder *cluster.Builder
	// nftRenderers and iptRenderers, set with builder, render each
	// family's nftables table or iptables tables reusing the output of the
	// ports that did not change.
	nftRenderers map[nodetable.Family]*render.NFTablesRenderer
	iptRenderers map[nodetable.Family]*render.IPTablesRenderer
}

// options is the shape of every command, as in kubectl's
// sample-cli-plugin: Complete fills in what the flags imply (defaults from
// the environment, the config file and the node name; strings parsed into
// typed values), Validate checks the result, and Run does the work.
type options interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE is the RunE of every command: Complete, Validate, Run.
func runE(o options) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := checkAliases(cmd.Flags()); err != nil {
			return err
		}
		warnNoEffect(cmd)
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// NewRootCommand builds the kubectl-svcproxy command tree.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(&common{streams: streams})
}

// newRootCommand builds the tree on c, which tests fill in (a fake clock).
func newRootCommand(c *common) *cobra.Command {
	streams := c.streams
	root := &cobra.Command{
		Use:   "kubectl-svcproxy",
		Short: "Render, plan and apply kube-proxy's node rules declaratively",
		Long: `kubectl svcproxy does kube-proxy's job declaratively. It snapshots a cluster's
Services, EndpointSlices and Nodes, renders the node's service-proxy ruleset
(iptables, nftables, ipvs or userspace mode) as kube-proxy v1.37 would program
it, and diffs that against the kernel.

Exit codes: 0 success (no changes), 1 changes pending (plan), 2 error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl svcproxy",
		},
	}
	// --version, as most command-line tools have it: the line that
	// `version` prints.
	root.Version = currentVersion().line()
	root.SetVersionTemplate("{{.Version}}\n")
	c.addGlobalFlags(root)
	root.AddCommand(
		newRenderCommand(c),
		newPlanCommand(c),
		newApplyCommand(c),
		newResetCommand(c),
		newProxyCommand(c),
		newTraceCommand(c),
		newSnapshotCommand(c),
		newVersionCommand(c),
	)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageTemplate(usageTemplate)
	addAliases(root)
	registerCompletions(root)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	return root
}

// warnOnce prints a warning line to stderr unless it was printed before.
func (c *common) warnOnce(msg string) {
	if _, seen := c.warned.LoadOrStore(msg, true); !seen {
		c.warnf("%s", msg)
	}
}

// warnCache reports, once per run, a state cache that could not be
// written or opened: the run goes on, since the cache only spares the
// next run a read of the kernel (kernelFlags.cacheDir).
func (c *common) warnCache(err error) {
	if _, seen := c.warned.LoadOrStore(warnedCache{}, true); !seen {
		c.warnf("the state cache was not written (%v); this run is not affected, the next one reads the kernel", err)
	}
}

// warnedCache is warnCache's key in common.warned.
type warnedCache struct{}

// warnf prints a warning line to stderr.
func (c *common) warnf(format string, args ...any) {
	fmt.Fprintf(c.streams.ErrOut, "warning: "+format+"\n", args...)
}
