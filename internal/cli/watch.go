package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/watch"
)

// watchFlags are the options of `apply --watch`, named and defaulted as
// kube-proxy's (--iptables-min-sync-period and --iptables-sync-period
// without the mode's prefix, as one flag serves every mode).
type watchFlags struct {
	enabled       bool
	minSyncPeriod time.Duration
	syncPeriod    time.Duration
	metricsAddr   string
	healthzAddr   string
	profiling     bool
}

// watchOnlyFlags are the flags that mean something only with --watch.
var watchOnlyFlags = []string{"min-sync-period", "sync-period", "metrics-bind-address", "healthz-bind-address", "profiling"}

func (w *watchFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&w.enabled, "watch", false, "keep running: watch the cluster and sync the kernel on every change, as kube-proxy does")
	fs.DurationVar(&w.minSyncPeriod, "min-sync-period", time.Second, "with --watch: the least time between two syncs; changes arriving meanwhile are batched into the next one (0: sync on every change)")
	fs.DurationVar(&w.syncPeriod, "sync-period", 30*time.Second, "with --watch: the most time between two syncs; each one re-reads the kernel and repairs drift, and a change waiting twice as long fails /healthz")
	fs.StringVar(&w.metricsAddr, "metrics-bind-address", "127.0.0.1:10249", "with --watch: host:port of the Prometheus /metrics endpoint (empty: none)")
	fs.BoolVar(&w.profiling, "profiling", false, "with --watch: also serve Go's CPU, heap and goroutine profiles under /debug/pprof/ on the metrics address, as kube-proxy's --profiling does")
	fs.StringVar(&w.healthzAddr, "healthz-bind-address", "0.0.0.0:10256", "with --watch: host:port of the /healthz and /livez endpoints, kube-proxy's, which cloud load balancers probe (empty: none)")
}

// validate rejects the watch-only flags without --watch, and --watch with
// any of conflicts (flag names, such as "filename" or "dry-run") set.
func (w *watchFlags) validate(fs *pflag.FlagSet, conflicts ...string) error {
	names := watchOnlyFlags
	if w.enabled {
		names = conflicts
	}
	for _, name := range names {
		if f := fs.Lookup(name); f != nil && f.Changed {
			if w.enabled {
				return fmt.Errorf("--watch cannot be used with %s", givenFlag(fs, name))
			}
			return fmt.Errorf("%s needs --watch", givenFlag(fs, name))
		}
	}
	return nil
}

// validatePeriods checks the sync periods of apply --watch and proxy,
// naming them as given: flag, kube-proxy alias or config file field.
func (f *ProxyFlags) validatePeriods(minSync, sync time.Duration) error {
	switch {
	case sync <= 0:
		return fmt.Errorf("%s %v: must be greater than 0", f.describe("sync-period"), sync)
	case minSync < 0 || minSync > sync:
		return fmt.Errorf("%s %v: must be between 0 and %s (%v)",
			f.describe("min-sync-period"), minSync, strings.TrimSuffix(f.describe("sync-period"), ":"), sync)
	}
	return nil
}

// runWatch runs until ctx is done, which is a clean stop (nil): Run's
// withInterrupt cancels it on SIGINT or SIGTERM, after the sync under way. sync renders snap and reconciles the kernel,
// returning a summary of what it changed; a failed sync is logged and
// retried. It returns an error only for what waiting cannot fix: invalid
// flags, an address already in use, rejected credentials, a missing
// permission or Node. An unreachable API server is waited for.
func (o *ApplyOptions) runWatch(ctx context.Context, health *healthcheck.ProxyHealth, sync watch.SyncFunc) error {
	w := &o.watch
	restConfig, err := o.input.conn.restConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	restConfig.UserAgent = "kubectl-svcproxy/" + version + " (watch)"
	log := o.logger()
	o.progress = false // a long-running command logs instead
	log.Info("Watching the API server", "server", restConfig.Host, "node", o.proxy.NodeName)
	err = watch.Run(ctx, watch.Config{
		RESTConfig:    restConfig,
		NodeName:      o.proxy.NodeName,
		MinSyncPeriod: w.minSyncPeriod,
		SyncPeriod:    w.syncPeriod,
		Health:        health,
		MetricsAddr:   w.metricsAddr,
		Profiling:     w.profiling,
		HealthzAddr:   w.healthzAddr,
		ProxyMode:     o.proxy.Mode,
		Families:      o.proxy.settings.families,
		Build:         buildInfo(),
		Sync:          sync,
		IsApplyFailure: func(err error) bool {
			var ipt *applyipt.ApplyError
			var nft *applynft.ApplyError
			return errors.As(err, &ipt) || errors.As(err, &nft)
		},
		Logger: log,
	})
	var perm *watch.PermanentError
	if errors.As(err, &perm) {
		return explainAPIError(restConfig.Host, err)
	}
	if err == nil {
		log.Info("Stopped")
	}
	return err
}
