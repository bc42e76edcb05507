package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// The metrics both processes of a side-by-side run export under
// kube-proxy's names.
const (
	latencyCount = "kubeproxy_network_programming_duration_seconds_count"
	latencySum   = "kubeproxy_network_programming_duration_seconds_sum"
	syncCount    = "kubeproxy_sync_proxy_rules_duration_seconds_count"
	syncSum      = "kubeproxy_sync_proxy_rules_duration_seconds_sum"
)

// Watched is one of the two proxies of a side-by-side run: the real
// kube-proxy, or `kubectl svcproxy apply --watch`, each in a node
// namespace of its own with its metrics on that namespace's loopback.
type Watched struct {
	Name      string
	ns        netlab.NS
	proc      *testcluster.Process
	started   time.Time
	synced    func(body []byte) bool
	FirstSync time.Duration
	Latencies []float64  // seconds, one per change
	Syncs     histTotals // the syncs while the changes were made
	Usage     testcluster.Usage
	API       APILoad // what it asked of the API server, and received
	APIStart  APILoad // the same, once it had synced and gone quiet
	bridge    *testcluster.Bridge
}

// WatchKubeProxy starts kube-proxy with its configuration file in ns (see
// StartKubeProxy); dir receives its log.
func WatchKubeProxy(ns netlab.NS, bin, config, dir string) (*Watched, error) {
	w := &Watched{Name: "kube-proxy", ns: ns, started: time.Now()}
	kp, err := StartKubeProxy(ns, bin, config, dir)
	if err != nil {
		return nil, err
	}
	w.proc = kp.Process
	w.synced = func(body []byte) bool {
		m, err := parseSyncMetrics(bytes.NewReader(body))
		return err == nil && m.Synced("IPv4", "IPv6")
	}
	return w, nil
}

// WatchTool starts `kubectl svcproxy apply --watch` with kube-proxy's
// configuration file in ns, on the nf_tables iptables backend, with its
// state, lock and log in dir and no kubeconfig but the file's.
func WatchTool(ns netlab.NS, bin, config, dir string) (*Watched, error) {
	cmd := ns.Command(context.Background(), bin, "apply", "--watch", "--config="+config,
		"--iptables-backend=nft", "--state-dir="+filepath.Join(dir, "state"), "--lock-file="+filepath.Join(dir, "lock"))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
	w := &Watched{Name: "kubectl-svcproxy", ns: ns, started: time.Now()}
	var err error
	if w.proc, err = testcluster.StartCommand(w.Name, cmd, filepath.Join(dir, "tool.log")); err != nil {
		return nil, err
	}
	w.synced = func(body []byte) bool { return MetricSum(body, syncCount) >= 1 }
	return w, nil
}

// Stop ends the process by its PID.
func (w *Watched) Stop() { w.proc.Stop() }

// Tail is the end of the process's log.
func (w *Watched) Tail(n int) string { return w.proc.Tail(n) }

func (w *Watched) scrape(ctx context.Context) ([]byte, error) {
	if err := w.proc.Running(); err != nil {
		return nil, err
	}
	return ScrapeMetrics(ctx, w.ns, metricsAddr)
}

// Pair is kube-proxy and the tool, in that order, run side by side.
type Pair [2]*Watched

// WaitFirstSync polls both until each has finished its first sync, and
// notes when it did; it gives up after limit.
func (p Pair) WaitFirstSync(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		done := true
		for _, w := range p {
			if w.FirstSync > 0 {
				continue
			}
			body, err := w.scrape(ctx)
			if err := w.proc.Running(); err != nil {
				return err
			}
			if err == nil && w.synced(body) {
				w.FirstSync = time.Since(w.started)
			} else {
				done = false
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no first sync of both after %v", limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WaitQuiet waits until neither has started a sync for two seconds:
// kube-proxy syncs again once it has read the Node, and a change should
// not wait behind that. It gives up after limit.
func (p Pair) WaitQuiet(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last, quiet := -1.0, 0
	for quiet < 4 {
		var syncs float64
		for _, w := range p {
			body, err := w.scrape(ctx)
			if err != nil {
				return err
			}
			syncs += MetricSum(body, syncCount)
		}
		if syncs == last {
			quiet++
		} else {
			last, quiet = syncs, 0
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still syncing after %v (%v syncs)", limit, syncs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}
