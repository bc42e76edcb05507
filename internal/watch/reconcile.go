package watch

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// reconciler is one sync, as the loop runs it: take a snapshot of the
// caches, hand it to the mode's SyncFunc, and account for the result in
// the metrics, the health state and the log.
type reconciler struct {
	src     *source
	sync    SyncFunc
	metrics *metrics
	health  *healthcheck.ProxyHealth
	log     *slog.Logger
	kick    func() // asks the loop for a sync
	changes *changeTracker
	// applyFailed says whether a sync's error is the kernel refusing the
	// write (iptables-restore or the nf_tables transaction); nil: never.
	applyFailed func(error) bool
	mode        string             // the proxy mode, for the failure counters
	families    []nodetable.Family // the node's, for kube-proxy's ip_family label
	now         func() time.Time   // the clock of the latency metric

	pending atomic.Bool // a change arrived since the last sync began

	// Owned by the loop's goroutine.
	runs        int
	failed      bool   // the last sync failed
	applied     bool   // a sync has succeeded: lastApplied is set
	lastApplied uint64 // fingerprint of the state last applied
}

// changed records a change in the cluster: the next sync is queued.
func (r *reconciler) changed(resource string, obj any, deleted bool) {
	r.changes.changed(resource, obj, deleted)
	r.pending.Store(true)
	r.health.Queued()
	r.kick()
}

// trigger says why this sync runs, for svcproxy_syncs_total.
func (r *reconciler) trigger() string {
	pending := r.pending.Swap(false)
	switch {
	case r.runs == 0:
		return triggerInitial
	case pending:
		return triggerEvent
	case r.failed:
		return triggerRetry
	}
	return triggerPeriodic
}

// run is one sync. Drift is a sync that changed the kernel although the
// cluster state is the one the last successful sync applied: the change
// can only have come from someone else writing the kernel. Comparing
// fingerprints of the snapshots, rather than asking whether an event was
// pending, is immune to an event whose object is already in the cache
// when its handler runs.
func (r *reconciler) run(ctx context.Context) error {
	trigger := r.trigger()
	r.runs++
	r.health.Claim()
	start := time.Now()
	triggers := r.changes.checkout()
	snap, fp, err := r.src.snapshot()
	var res Result
	if err == nil {
		res, err = r.sync(ctx, snap)
	}
	sum := res.Summary
	took := time.Since(start)
	// As kube-proxy: a full sync rewrites everything (at the start, after
	// a failure, and periodically, when the tool re-reads the kernel),
	// a partial one only what changed.
	r.metrics.proxy.ObserveDuration(r.families, took, trigger != triggerEvent)
	if err != nil {
		r.changes.putBack(triggers)
		r.countApplyFailure(err, trigger != triggerEvent)
		r.failed = true
		r.metrics.syncErrors.Inc()
		r.metrics.syncs.WithLabelValues(trigger, "error").Inc()
		r.health.Done(false)
		if ctx.Err() == nil {
			r.log.Error("Sync failed, will retry", "trigger", trigger, "elapsed", took.Round(time.Millisecond), "err", err)
		}
		return err
	}
	r.changes.programmed(triggers, r.now())
	drift := r.applied && fp == r.lastApplied && !sum.Empty()
	r.failed, r.applied, r.lastApplied = false, true, fp
	r.metrics.proxy.ObserveSynced(res.Families)
	r.health.Done(true)
	r.metrics.countApplied(sum)
	result := "unchanged"
	if !sum.Empty() {
		result = "changed"
	}
	r.metrics.syncs.WithLabelValues(trigger, result).Inc()
	switch {
	case drift:
		r.metrics.drift.Inc()
		r.log.Info("Repaired drift: the kernel had changed behind the tool's back", "trigger", trigger, "elapsed", took.Round(time.Millisecond), "changes", sum.String())
	case trigger == triggerInitial:
		r.log.Info("Synced", "trigger", trigger, "elapsed", took.Round(time.Millisecond), "changes", sum.String())
	case !sum.Empty():
		r.log.Debug("Synced", "trigger", trigger, "elapsed", took.Round(time.Millisecond), "changes", sum.String())
	default:
		r.log.Log(ctx, slog.LevelDebug-4, "Synced", "trigger", trigger, "elapsed", took.Round(time.Millisecond), "changes", sum.String())
	}
	return nil
}

// countApplyFailure counts a write the kernel refused, under the mode's
// kube-proxy name: nftables' sync failures, or iptables-restore's (the
// ipvs mode's helper chains included, as in kube-proxy). One apply writes
// every family and undoes them all on failure, so each family counts it.
// In iptables mode a partial sync's failure (full is false) also counts
// as kube-proxy's partial restore failure, after which, as in
// kube-proxy, the retry is a full sync.
func (r *reconciler) countApplyFailure(err error, full bool) {
	if r.applyFailed == nil || !r.applyFailed(err) {
		return
	}
	p := r.metrics.proxy
	for _, f := range r.families {
		switch r.mode {
		case "nftables":
			p.NFTablesSyncFailures.WithLabelValues(string(f)).Inc()
		case "iptables":
			if !full {
				p.IPTablesPartialRestoreFailures.WithLabelValues(string(f)).Inc()
			}
			fallthrough
		default:
			p.IPTablesRestoreFailures.WithLabelValues(string(f)).Inc()
		}
	}
}
