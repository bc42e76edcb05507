package cli

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/otherproxy"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/healthcheck"
)

// kube-proxy's default health and metrics addresses, which are also the
// tool's: a kube-proxy is looked for there whatever the tool is told.
const (
	kubeProxyHealthzAddr = "0.0.0.0:10256"
	kubeProxyMetricsAddr = "127.0.0.1:10249"
)

// probeTimeout bounds each question to kube-proxy's ports. A kube-proxy
// answers on loopback in well under a millisecond; nothing listening is
// refused at once, so only a port that accepts and stays mute waits this
// long.
const probeTimeout = 300 * time.Millisecond

// takeOverFlags is apply's --take-over: apply beside a live kube-proxy.
// It is not --force, which passes the guard rails against a wrong input:
// a script that forces a small input through must not also start a fight
// with kube-proxy over every rule.
type takeOverFlags struct {
	takeOver bool
}

func (f *takeOverFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.takeOver, "take-over", false, "apply even though kube-proxy runs on this node (both then write the same rules until kube-proxy is stopped); --force does not imply it")
}

// probeTargets are the URLs a kube-proxy would answer on: its default
// addresses, and the ones given (apply's --healthz-bind-address and
// --metrics-bind-address, which a config file shared with kube-proxy
// sets to its own). A wildcard host is asked on loopback.
func probeTargets(healthzAddrs, metricsAddrs []string) []otherproxy.Target {
	var out []otherproxy.Target
	add := func(addr, path string, metrics bool) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			return
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		t := otherproxy.Target{URL: "http://" + net.JoinHostPort(host, port) + path, Metrics: metrics}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, a := range append([]string{kubeProxyHealthzAddr}, healthzAddrs...) {
		add(a, healthcheck.PathHealthz, false)
	}
	for _, a := range append([]string{kubeProxyMetricsAddr}, metricsAddrs...) {
		add(a, "/metrics", true)
	}
	return out
}

// detectKubeProxy looks for a live kube-proxy (apply/otherproxy). A probe
// that cannot run is no finding: the check helps, it must not stop a
// node's sync; it is logged for the curious.
func (c *common) detectKubeProxy(ctx context.Context, targets []otherproxy.Target) otherproxy.Verdict {
	s, err := otherproxy.Probe(ctx, otherproxy.Config{Targets: targets, Timeout: probeTimeout, SelfServer: healthcheck.ServerName})
	if err != nil {
		c.logger().Debug("Could not list the node's processes", "err", err)
	}
	return otherproxy.Decide(s)
}

// checkKubeProxy refuses to apply beside a live kube-proxy unless
// --take-over; with it, or with dryRun (nothing is written), it warns.
func (o *ApplyOptions) checkKubeProxy(ctx context.Context, dryRun bool) error {
	v := o.detectKubeProxy(ctx, probeTargets([]string{o.watch.healthzAddr}, []string{o.watch.metricsAddr}))
	if !v.KubeProxy {
		return nil
	}
	switch {
	case dryRun:
		o.warnf("%s: a real apply would refuse to run beside it without --take-over", v)
		return nil
	case o.takeOver.takeOver:
		o.warnf("%s; applying beside it: both write the same rules, and each undoes the other's changes until kube-proxy is stopped", v)
		return nil
	}
	return fmt.Errorf("%w: %s, and both would write the same rules, each undoing the other's changes. "+
		"Stop kube-proxy first (kubectl -n kube-system delete daemonset kube-proxy), or pass --take-over to apply anyway", errRefused, v)
}

// noteKubeProxy is plan's word on a live kube-proxy: the plan compares
// the rules kube-proxy keeps, and apply would refuse.
func (c *common) noteKubeProxy(ctx context.Context) {
	v := c.detectKubeProxy(ctx, probeTargets(nil, nil))
	if v.KubeProxy {
		c.warnf("%s: the live rules are kube-proxy's, and apply refuses to run beside it without --take-over", v)
	}
}

// noteOtherModes warns of the rules of modes other than mode on the node
// (otherModeRules): applying mode leaves them, and with them two sets of
// rules answer for the same Services. The tool's record of its applies
// says whether it wrote them (k.whose).
func (c *common) noteOtherModes(k *kernelFlags, mode Mode) {
	for _, r := range otherModeRules(mode) {
		c.warnf("the node also holds %s rules (%s), %s; `kubectl svcproxy reset --mode=%s` removes them",
			r.mode, strings.Join(r.seen, ", "), k.whose(r.mode), r.mode)
	}
}
