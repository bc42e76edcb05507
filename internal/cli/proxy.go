package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/watch"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	proxy "github.com/kubectl-svcproxy/kubectl-svcproxy/proxy/userspace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/proxy/userspace/trigger"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// ProxyOptions are the options of `proxy`, the long-running userspace
// proxy. Flag names follow kube-proxy v1.25 where it had the setting, and
// apply --watch for the sync periods.
type ProxyOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	kernel kernelFlags

	udpTimeout     time.Duration
	syncPeriod     time.Duration
	minSyncPeriod  time.Duration
	reloadInterval time.Duration
	metricsAddr    string
	healthzAddr    string
	cleanupOnExit  bool

	log     *slog.Logger
	proxier *proxy.Proxier
	health  *healthcheck.ProxyHealth
	// families are those of the last good render, for --cleanup-on-exit.
	families []nodetable.Family
}

func newProxyCommand(c *common) *cobra.Command {
	// proxy runs only the userspace mode, on the node. A long-running
	// proxy waits for a concurrent apply rather than fail.
	o := &ProxyOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts &^ ipvsPart),
		kernel: kernelFlags{locking: true, lockWait: 5 * time.Second, conntrack: true, conntrackV125: true}}
	o.proxy.Mode = string(ModeUserspace)
	o.proxy.onNode = true
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the userspace-mode proxy: portal rules plus a TCP/UDP proxy per Service port",
		Long: `Run kube-proxy's userspace mode (as of v1.25) as a long-running process.

It applies the portal rules (nat KUBE-PORTALS-*, KUBE-NODEPORT-*) through the
same iptables path as apply, listens on every Service port's proxy port, and
forwards TCP and UDP to the endpoints, round robin, with ClientIP affinity.
It reloads when the snapshot file changes (-f), or on API watch events. A
snapshot that fails to load keeps the last good state; the error is logged.
SIGTERM or SIGINT stop it; --cleanup-on-exit then removes the portal rules.

Only --mode=userspace is supported, and it is the default here.`,
		Example: `  # Run the userspace proxy for this node, IPv4 only (on a node, as root)
  kubectl svcproxy proxy --node-name=$(hostname) --family=ipv4
  # The same from a snapshot file, removing its rules on exit (on a node, as root)
  kubectl svcproxy proxy -f snapshot.yaml --node-name=node1 --cleanup-on-exit -v 2`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	fs := cmd.Flags()
	o.input.addFlags(fs)
	o.proxy.AddFlags(fs)
	o.kernel.addFlags(fs)
	fs.DurationVar(&o.udpTimeout, "udp-timeout", proxy.DefaultUDPIdleTimeout, "how long an idle UDP flow is kept open")
	fs.DurationVar(&o.syncPeriod, "sync-period", 30*time.Second, "the most time between two syncs: each reloads the state and re-applies the portal rules, changes or not (kube-proxy's --iptables-sync-period)")
	fs.DurationVar(&o.minSyncPeriod, "min-sync-period", time.Second, "the least time between two syncs; changes arriving meanwhile are batched into the next one (kube-proxy's --iptables-min-sync-period)")
	fs.DurationVar(&o.reloadInterval, "reload-interval", time.Second, "how often the -f snapshot file is checked for changes")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:10249", "host:port of the /metrics endpoint (empty: none)")
	fs.StringVar(&o.healthzAddr, "healthz-bind-address", "0.0.0.0:10256", "host:port of the /healthz endpoint (empty: none)")
	fs.BoolVar(&o.cleanupOnExit, "cleanup-on-exit", false, "remove the portal rules when stopped by SIGTERM or SIGINT")
	markNeedsLinux(cmd, "it proxies Services through this node's kernel rules")
	return cmd
}

// Complete reads the config file and parses the settings, with the node's
// sysctls.
func (o *ProxyOptions) Complete(cmd *cobra.Command, _ []string) error {
	return completeRender(cmd, &o.input, o.proxy)
}

// Validate checks the mode and the command's own flags, then the shared ones.
func (o *ProxyOptions) Validate() error {
	switch {
	case o.proxy.Mode != string(ModeUserspace):
		return fmt.Errorf("%s %s: proxy runs only --mode=userspace", o.proxy.describe("mode"), o.proxy.Mode)
	case o.udpTimeout <= 0:
		return fmt.Errorf("--udp-timeout %v: must be greater than 0", o.udpTimeout)
	case o.reloadInterval <= 0:
		return fmt.Errorf("--reload-interval %v: must be greater than 0", o.reloadInterval)
	}
	if err := o.proxy.validatePeriods(o.minSyncPeriod, o.syncPeriod); err != nil {
		return err
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	if err := o.proxy.validateRender(ModeUserspace); err != nil {
		return err
	}
	return o.kernel.validate(o.proxy)
}

// Run runs the proxy until SIGTERM or SIGINT.
func (o *ProxyOptions) Run(ctx context.Context) error {
	endHeapFloor() // a long-running command: Go's default pacing
	ctx, stop := withInterrupt(ctx)
	defer stop()
	o.log = o.logger()
	o.progress = false // a long-running command logs instead
	// kube-proxy v1.25's /healthz, fed by every reload: v1.25's userspace
	// proxier fed it nothing, so that it always answered 200.
	o.health = newProxyHealth(ModeUserspace, max(2*o.syncPeriod, 10*time.Second), nil)
	if err := o.setConntrack(); err != nil {
		return err
	}
	changes, err := o.changes(ctx)
	if err != nil {
		return err
	}
	// The proxier outlives ctx: the portal rules go first on shutdown.
	o.proxier = proxy.New(proxy.Options{UDPIdleTimeout: o.udpTimeout, Logger: o.log})
	runCtx, stopProxier := context.WithCancel(context.Background())
	proxierDone := make(chan struct{})
	go func() { o.proxier.Run(runCtx); close(proxierDone) }()
	defer func() { stopProxier(); <-proxierDone }()
	servers, err := o.serveHTTP()
	if err != nil {
		return err
	}
	defer shutdownAll(servers)

	// The first load and sync must succeed; later ones keep the last
	// good state when they fail.
	if err := o.reload(ctx); err != nil {
		return err
	}
	o.log.Info("Userspace proxy running", "node", o.proxy.NodeName)
	o.loop(ctx, changes)

	o.log.Info("Stopping")
	if o.cleanupOnExit {
		o.cleanup()
	}
	return nil
}

// changes starts watching the state's source, before the first load, so
// that no change is missed. The example and stdin never change.
func (o *ProxyOptions) changes(ctx context.Context) (trigger.Signal, error) {
	switch {
	case o.input.example || o.input.file == "-":
		return nil, nil
	case o.input.file != "":
		return trigger.File(ctx, o.input.file, o.reloadInterval, o.log), nil
	}
	restConfig, err := o.input.conn.restConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return trigger.API(ctx, client, o.proxy.NodeName, o.log), nil
}

// loop reloads on every change, at most once per --min-sync-period, and at
// least once per --sync-period, until the context ends, with the loop of
// apply --watch: a failed reload is retried after a second, doubling up to
// --sync-period, so a held lock or a bad snapshot neither spins nor waits
// a full period after a blip.
func (o *ProxyOptions) loop(ctx context.Context, changes trigger.Signal) {
	watch.RunBounded(ctx, changes, o.minSyncPeriod, o.syncPeriod, func(context.Context) error {
		err := o.reload(ctx)
		if err != nil {
			o.log.Error("Reload failed; keeping the last good state", "err", err)
		}
		return err
	})
}

// reload loads and renders the state, then updates the proxy sockets and
// applies the portal rules, in that order, so that a new portal never
// points at a port nobody listens on yet.
func (o *ProxyOptions) reload(ctx context.Context) error {
	d, err := o.renderDesired(ctx, &o.input, &o.proxy.settings)
	if err != nil {
		o.proxier.Metrics().RecordSync(err)
		return err
	}
	// The change is queued once its state is known, so that an API
	// server that cannot be read does not fail /healthz by itself, as in
	// apply --watch.
	o.health.Queued()
	o.health.Claim()
	var portals []*ipt.Ruleset
	for _, rs := range d.userspace {
		portals = append(portals, rs.IPTables)
	}
	// A port that cannot be opened (address in use) is retried by the
	// next sync; the rest is applied regardless.
	listenErr := o.proxier.Update(d.userspace)
	if listenErr != nil {
		o.log.Error("Some proxy sockets could not be opened", "err", listenErr)
	}
	_, plans, err := o.syncKernel(ctx, &o.kernel, ModeUserspace, portals, false, nil)
	if err != nil {
		err = fmt.Errorf("apply the portal rules: %w", err)
		o.proxier.Metrics().RecordSync(err)
		o.health.Done(false)
		return err
	}
	o.families = d.families
	o.proxier.Metrics().RecordSync(listenErr)
	o.health.Done(listenErr == nil)
	var total diff.Summary
	for _, p := range plans {
		total.Add(p.Changes.Summary())
	}
	level := levelV4
	if !total.Empty() {
		level = levelV2
	}
	o.log.Log(ctx, level, "Synced", "servicePorts", countPorts(d), "portalRules", total.String())
	return nil
}

func countPorts(d *desired) int {
	n := 0
	for _, rs := range d.userspace {
		n += len(rs.Ports)
	}
	return n
}

// cleanup removes the portal rules of the families last synced.
func (o *ProxyOptions) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var empty []*ipt.Ruleset
	for _, f := range o.families {
		empty = append(empty, diff.EmptyIPTables(f))
	}
	if _, _, err := o.syncKernel(ctx, &o.kernel, ModeUserspace, empty, false, nil); err != nil {
		o.log.Error("Could not remove the portal rules", "err", err)
		return
	}
	o.log.Info("Removed the portal rules")
}

// serveHTTP opens the metrics and health endpoints; a port in use is an
// error at once, not a log line later.
func (o *ProxyOptions) serveHTTP() ([]*http.Server, error) {
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", o.proxier.Metrics())
	metrics.HandleFunc("/proxyMode", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, ModeUserspace) })
	healthz := o.health.Mux(healthcheck.Serving{})
	endpoints := []struct {
		flag, addr string
		handler    http.Handler
	}{{"--metrics-bind-address", o.metricsAddr, healthcheck.Identify(metrics)}, {"--healthz-bind-address", o.healthzAddr, healthcheck.Identify(healthz)}}
	var servers []*http.Server
	for _, e := range endpoints {
		if e.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", e.addr)
		if err != nil {
			shutdownAll(servers)
			return nil, fmt.Errorf("%s: %w (pass %s= to serve none)", e.flag, err, e.flag)
		}
		srv := &http.Server{Handler: e.handler, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		servers = append(servers, srv)
		o.log.Debug("Serving", "endpoint", e.flag[2:], "address", ln.Addr().String())
	}
	return servers, nil
}

func shutdownAll(servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Close()
		}
	}
}
