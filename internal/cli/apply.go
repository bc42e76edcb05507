package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/watch"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/metrics"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// ApplyOptions are the options of `apply`.
type ApplyOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	kernel kernelFlags
	dryRun bool
	// wait, in ipvs mode, waits up to waitTimeout for draining real
	// servers to lose their connections and deletes them.
	wait        bool
	waitTimeout time.Duration
	watch       watchFlags
	guard       guardFlags
	takeOver    takeOverFlags
	// recorded says that the record of this apply is written (applied.go).
	recorded bool
	// saved is the plan file of apply FILE.
	saved *savedplan.Plan
	// flags are the command's flags, for the checks of what was given.
	flags *pflag.FlagSet
	// cleanups are the last apply's stale-flow cleanups, by family.
	cleanups map[nodetable.Family]*metrics.ConntrackRun
}

// newApplyOptions returns apply's options: it runs on the node, takes the
// lock, and works in every mode.
func newApplyOptions(c *common) *ApplyOptions {
	o := &ApplyOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts), kernel: kernelFlags{locking: true, ipvs: true, conntrack: true}}
	o.proxy.onNode = true
	return o
}

func newApplyCommand(c *common) *cobra.Command {
	o := newApplyOptions(c)
	cmd := &cobra.Command{
		Use:   "apply [PLAN_FILE]",
		Short: "Change this node's kernel rules to match the cluster, changing only what differs",
		Long: `Render the desired rules, read the live rules, and write only the chains that
differ. In iptables and userspace mode that is one iptables-restore --noflush
per IP family, which commits the filter table, then the nat table; if a table
fails, the tables already written are restored. In nftables mode it is one
netlink transaction per table. Either way the kernel is fully applied or as it
was. Rules the tool does not own are never touched. Stale UDP conntrack entries
of changed Services are deleted afterwards.

SIGTERM or SIGINT before the first write stops the apply with nothing written
(exit 2); once it writes, the apply is finished first (exit 0, with a note on
stderr). A second signal ends the process at once; a restore already running
still completes.

With PLAN_FILE, a plan saved by plan --out, apply executes exactly that
plan: it renders the plan's snapshot with the plan's settings, and writes
only if the node's owned rules, the machine and the change set are all
still the ones the plan recorded. Otherwise it exits 2 and changes nothing.

If kube-proxy runs on the node (its process, or its answers on its health
and metrics ports), apply refuses, since both would write the same rules;
--take-over applies anyway.

Exit codes: 0 applied (or nothing to do), 2 error.`,
		Example: `  # Make this node match the cluster (on a node, as root)
  kubectl svcproxy apply --node-name=$(hostname) --cluster-cidr=10.244.0.0/16
  # Print what would be sent to the kernel, without sending it (on a node, as root)
  kubectl svcproxy apply -f snapshot.yaml --dry-run
  # Save a plan, review it, then apply exactly it (on a node, as root)
  kubectl svcproxy plan --node-name=$(hostname) --out=node.plan
  kubectl svcproxy apply node.plan`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.kernel.addFlags(cmd.Flags())
	o.watch.addFlags(cmd.Flags())
	o.guard.addFlags(cmd.Flags())
	o.takeOver.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.wait, "wait", false, "ipvs mode: wait for draining real servers to lose their connections, then delete them")
	cmd.Flags().DurationVar(&o.waitTimeout, "wait-timeout", 5*time.Minute, "ipvs mode: how long --wait waits")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print exactly what would be sent to the kernel (restore input, nft script, ipvs commands) instead of sending it")
	markNeedsLinux(cmd, "it changes this node's kernel rules")
	return cmd
}

// Complete reads the config file and parses the settings, with the node's
// sysctls.
func (o *ApplyOptions) Complete(cmd *cobra.Command, args []string) error {
	o.flags = cmd.Flags()
	if len(args) == 1 {
		if err := o.loadSaved(args[0]); err != nil {
			return err
		}
	}
	if err := completeRender(cmd, &o.input, o.proxy); err != nil {
		return err
	}
	if o.saved != nil {
		return checkSavedSettings(args[0], o.saved, &o.proxy.settings)
	}
	return nil
}

// loadSaved reads a saved plan and takes its settings and snapshot. The
// file decides what is written, so it is read only if no one but this
// user can have written it, as the lock file is (statefile.OpenOwnFile).
func (o *ApplyOptions) loadSaved(path string) error {
	f, err := statefile.OpenOwnFile(path)
	if err != nil {
		return fmt.Errorf("saved plan: %w", err)
	}
	defer f.Close()
	saved, err := savedplan.Read(f, path)
	if err != nil {
		return err
	}
	if err := restoreSettings(o.flags, saved); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	o.saved = saved
	o.input.saved = saved.Snapshot
	return nil
}

// Validate checks the flags.
func (o *ApplyOptions) Validate() error {
	if err := o.watch.validate(o.flags, "filename", "example", "dry-run", "wait"); err != nil {
		return err
	}
	if o.watch.enabled {
		if err := o.proxy.validatePeriods(o.watch.minSyncPeriod, o.watch.syncPeriod); err != nil {
			return err
		}
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	if err := o.guard.validate(); err != nil {
		return err
	}
	if err := o.proxy.validateRender(kernelModes...); err != nil {
		return err
	}
	return o.kernel.validate(o.proxy)
}

// Run renders, locks, plans and applies, once or (--watch) on every change.
// A SIGTERM or SIGINT stops it before it writes, or after the apply it has
// started (see withInterrupt).
func (o *ApplyOptions) Run(ctx context.Context) error {
	ctx, stop := withInterrupt(ctx)
	defer stop()
	if o.watch.enabled {
		return o.runWatchMode(ctx)
	}
	settings := &o.proxy.settings
	snap, err := o.load(ctx, &o.input, settings.cluster.NodeName)
	if err != nil {
		return err
	}
	if err := o.guard.checkInput(snap, settings.cluster.NodeName); err != nil {
		return err
	}
	d, err := o.renderSnapshot(settings, snap)
	if err != nil {
		return notWritten(ctx, err)
	}
	b, err := o.backend(ctx, &o.kernel, d.mode)
	if err != nil {
		return notWritten(ctx, err)
	}
	if err := o.checkKubeProxy(ctx, o.dryRun); err != nil {
		return notWritten(ctx, err)
	}
	o.noteOtherModes(&o.kernel, d.mode)
	p, err := o.applyDesired(ctx, b, d, o.dryRun)
	if err != nil || o.dryRun {
		return err
	}
	fmt.Fprintf(o.streams.Out, "Applied (%s): %s\n", b.name(), p.summary())
	if np, ok := p.(*nftPlan); ok && len(np.pending()) > 0 {
		fmt.Fprintf(o.streams.ErrOut, "stale chains emptied but still referenced by the kernel, deleted by the next apply: %s\n", strings.Join(np.pending(), ", "))
	}
	if ie := o.noteFinished(ctx, "apply"); ie != nil && o.wait {
		return fmt.Errorf("%w: the apply was finished, but not --wait", ie)
	}
	if o.wait {
		return o.waitDrained(ctx, b, p)
	}
	return nil
}

// waitDrained finishes graceful termination in ipvs mode (apply --wait).
func (o *ApplyOptions) waitDrained(ctx context.Context, b kernelBackend, p kernelPlan) error {
	ib, ok := b.(*ipvsBackend)
	if !ok {
		return nil
	}
	n, err := ib.client.WaitDrained(ctx, p.(*ipvsPlan).plans, o.waitTimeout)
	if n > 0 {
		fmt.Fprintf(o.streams.Out, "Deleted %d drained real servers\n", n)
	}
	return err
}

// applyDesired plans d against the kernel and applies it under the lock,
// then cleans stale UDP conntrack entries.
func (o *ApplyOptions) applyDesired(ctx context.Context, b kernelBackend, d *desired, dryRun bool) (kernelPlan, error) {
	beforeApply := func(p kernelPlan) error {
		// A one-shot apply guards against removing most of the node; in
		// watch mode a mass deletion in the cluster is real and must go
		// through (an empty list is refused before this).
		if o.watch.enabled {
			return nil
		}
		return o.guard.checkRemoval(p)
	}
	plan := func() (kernelPlan, error) {
		p, err := planKernel(ctx, &o.kernel, b, d, o.streams.ErrOut)
		if err == nil && o.saved != nil {
			err = verifySaved(o.saved, b, p)
		}
		return p, err
	}
	p, err := o.sync(ctx, &o.kernel, b, plan, dryRun, beforeApply)
	if err != nil || dryRun {
		return p, err
	}
	if !o.recorded {
		o.kernel.recordApplied(d.mode)
		o.recorded = true // watch mode: once, not at every sync
	}
	if d.mode != ModeUserspace {
		o.cleanConntrack(d, p)
	}
	return p, nil
}

// runWatchMode is apply --watch: the settings are checked and the kernel
// backend opened once, then every sync renders the informers' snapshot and
// applies it, and then serves the Service health checks it asks for.
func (o *ApplyOptions) runWatchMode(ctx context.Context) error {
	tuneDaemonGC()
	settings := &o.proxy.settings
	b, err := o.backend(ctx, &o.kernel, settings.mode)
	if err != nil {
		return err
	}
	if err := o.checkKubeProxy(ctx, false); err != nil {
		return err
	}
	o.noteOtherModes(&o.kernel, settings.mode)
	o.builder = &cluster.Builder{}
	o.nftRenderers = map[nodetable.Family]*render.NFTablesRenderer{nodetable.IPv4: {}, nodetable.IPv6: {}}
	o.iptRenderers = map[nodetable.Family]*render.IPTablesRenderer{nodetable.IPv4: {}, nodetable.IPv6: {}}
	saver, _ := b.(cacheSaver)
	if saver != nil {
		saver.deferCacheFiles()
		defer o.saveCache(saver)
	}
	health := newProxyHealth(settings.mode, 2*o.watch.syncPeriod, settings.families)
	checks := newServiceChecks(settings.mode, health, o.logger())
	defer checks.close()
	return o.runWatch(ctx, health, func(ctx context.Context, snap *cluster.Snapshot) (watch.Result, error) {
		if err := o.guard.checkServices(snap); err != nil {
			return watch.Result{}, err
		}
		d, err := o.renderSnapshot(settings, snap)
		if err != nil {
			return watch.Result{}, err
		}
		p, err := o.applyDesired(ctx, b, d, false)
		if err != nil {
			return watch.Result{}, err
		}
		checks.sync(d)
		if saver != nil && p.empty() {
			o.saveCache(saver) // idle: nothing changed
		}
		return watch.Result{Summary: p.summary(), Families: syncStats(d, p, o.cleanups)}, nil
	})
}

// cacheSaver is a backend whose cache of the kernel's state can hold its
// files back: in watch mode, writing them after every sync would cost
// more than a small change does (see SaveCache in apply/iptables and
// apply/nftables). The files serve the next run of a command, such as an
// operator's plan; they are written when a sync finds nothing to change
// (at the latest every --sync-period while the cluster is quiet) and when
// the watch stops.
type cacheSaver interface {
	deferCacheFiles()
	saveCache() error
}

func (b *iptablesBackend) deferCacheFiles() { b.client.DeferFiles = true }
func (b *iptablesBackend) saveCache() error { return b.client.SaveCache() }
func (b *nftBackend) deferCacheFiles()      { b.client.DeferFiles = true }
func (b *nftBackend) saveCache() error      { return b.client.SaveCache() }

// saveCache writes the held-back cache files; a file it cannot write is
// warned about through the client's CacheWarn, as in a one-shot run, and
// the error left is that of reading the nf_tables generation.
func (o *ApplyOptions) saveCache(s cacheSaver) {
	if err := s.saveCache(); err != nil {
		o.logger().Warn("Could not save the state cache; the next run reads the kernel", "err", err)
	}
}

// cleanConntrack deletes the stale UDP conntrack entries of the families the
// plan changed, as kube-proxy does after each sync. A failure is a warning:
// the rules are already in place.
//
// It keeps each family's cleanup, timed, in o.cleanups for the metrics
// of apply --watch.
func (o *ApplyOptions) cleanConntrack(d *desired, p kernelPlan) {
	o.cleanups = map[nodetable.Family]*metrics.ConntrackRun{}
	for _, f := range d.families {
		if !p.changed(f) {
			continue
		}
		run, err := cleanConntrackTimed(d.tables.ForFamily(f))
		o.cleanups[f] = run
		if err != nil {
			o.warnf("%v", err)
		} else if run.Deleted > 0 {
			fmt.Fprintf(o.streams.ErrOut, "deleted %d stale UDP conntrack entries (%s)\n", run.Deleted, f)
		}
	}
}
