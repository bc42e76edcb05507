package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// Where kube-proxy serves inside its namespace. Every kube-proxy runs in a
// namespace of its own, so the fixed ports never clash.
const (
	metricsAddr = "127.0.0.1:10249"
	healthzAddr = "127.0.0.1:10256"
)

// KubeProxy is the real kube-proxy running inside a lab namespace. Stop
// ends it by its PID; it leaves its rules in place, as kube-proxy does on
// exit.
type KubeProxy struct {
	*testcluster.Process
	ns      netlab.NS
	Started time.Time
}

// StartKubeProxy starts kube-proxy with its configuration file in ns
// through `ip netns exec`, which execs it: the PID is kube-proxy's. dir
// receives its log and a directory for its PATH, whose `iptables` is the
// nf_tables backend, which DetectBackend picks in a fresh namespace.
func StartKubeProxy(ns netlab.NS, bin, config, dir string) (*KubeProxy, error) {
	return startKubeProxy(ns, dir, bin, "--config="+config)
}

// startKubeProxy runs name with args in ns, as StartKubeProxy runs
// kube-proxy; name execs kube-proxy in the end.
func startKubeProxy(ns netlab.NS, dir, name string, args ...string) (*KubeProxy, error) {
	pathDir, err := nftBackendPath(dir)
	if err != nil {
		return nil, err
	}
	cmd := ns.Command(context.Background(), name, args...)
	cmd.Env = append(os.Environ(), "PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	kp := &KubeProxy{ns: ns, Started: time.Now()}
	if kp.Process, err = testcluster.StartCommand("kube-proxy", cmd, filepath.Join(dir, "kube-proxy.log")); err != nil {
		return nil, err
	}
	return kp, nil
}

// nftBackendPath makes a directory whose iptables commands are the
// nf_tables backend's, for kube-proxy's PATH.
func nftBackendPath(dir string) (string, error) {
	bin := filepath.Join(dir, "iptables-nft-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			target, err := exec.LookPath(fam + "-nft" + suffix)
			if err != nil {
				return "", err
			}
			link := filepath.Join(bin, fam+suffix)
			if err := os.Symlink(target, link); err != nil && !errors.Is(err, os.ErrExist) {
				return "", err
			}
		}
	}
	return bin, nil
}

// SyncMetrics are kube-proxy's sync metrics at one moment, per IP family
// ("IPv4", "IPv6"): each family has its own proxier.
type SyncMetrics map[string]FamilySync

// FamilySync is one family's proxier's sync metrics.
type FamilySync struct {
	// Syncs counts the syncs done (kubeproxy_sync_proxy_rules_duration_seconds_count).
	Syncs int
	// Total is the time spent in them (the histogram's sum).
	Total time.Duration
	// Last is when the last one finished
	// (kubeproxy_sync_proxy_rules_last_timestamp_seconds).
	Last time.Time
}

// Synced reports whether every family has finished a sync.
func (m SyncMetrics) Synced(families ...string) bool {
	for _, f := range families {
		if m[f].Syncs == 0 {
			return false
		}
	}
	return len(families) > 0
}

// LastSync is when the last family finished its last sync.
func (m SyncMetrics) LastSync() time.Time {
	var last time.Time
	for _, f := range m {
		if f.Last.After(last) {
			last = f.Last
		}
	}
	return last
}

// Metrics reads the sync metrics from kube-proxy's metrics endpoint,
// dialling from inside the namespace.
func (kp *KubeProxy) Metrics(ctx context.Context) (SyncMetrics, error) {
	body, err := ScrapeMetrics(ctx, kp.ns, metricsAddr)
	if err != nil {
		return nil, err
	}
	return parseSyncMetrics(bytes.NewReader(body))
}

// parseSyncMetrics reads the three sync metrics of every family from the
// Prometheus text format, where they look like
// `kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 1`.
func parseSyncMetrics(r io.Reader) (SyncMetrics, error) {
	m := SyncMetrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		series, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(series, "#") {
			continue
		}
		name, labels, _ := strings.Cut(series, "{")
		_, family, ok := strings.Cut(labels, `ip_family="`)
		if !ok {
			continue
		}
		family, _, _ = strings.Cut(family, `"`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		fs := m[family]
		switch name {
		case "kubeproxy_sync_proxy_rules_duration_seconds_count":
			fs.Syncs = int(v)
		case "kubeproxy_sync_proxy_rules_duration_seconds_sum":
			fs.Total = time.Duration(v * float64(time.Second))
		case "kubeproxy_sync_proxy_rules_last_timestamp_seconds":
			fs.Last = time.Unix(0, int64(v*float64(time.Second)))
		default:
			continue
		}
		m[family] = fs
	}
	return m, sc.Err()
}

// WaitSynced polls the metrics every interval until kube-proxy has
// finished its first sync in both families, and returns the metrics then. It fails when
// kube-proxy exits, or after timeout (an error that wraps ErrTimeout).
func (kp *KubeProxy) WaitSynced(ctx context.Context, timeout, interval time.Duration) (SyncMetrics, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if err := kp.Running(); err != nil {
			return nil, err
		}
		m, err := kp.Metrics(ctx)
		if err == nil && m.Synced("IPv4", "IPv6") {
			return m, nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return m, fmt.Errorf("%w: no sync after %v (last error %v)", ErrTimeout, timeout, last)
		}
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// WaitTopology waits until kube-proxy has taken its node's topology labels
// (the zone) and finished a sync in every family after that. kube-proxy
// learns the zone from a Node informer event that its first sync does not
// wait for, and logs the handover at verbosity 4 (see KubeProxyConfigV);
// on a loaded machine that event came seconds after the first sync. The
// log line's time is compared with each family's last sync.
func (kp *KubeProxy) WaitTopology(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := kp.Running(); err != nil {
			return err
		}
		at, logged := kp.lastLogTime(topologyChangeLog)
		if logged {
			if m, err := kp.Metrics(ctx); err == nil && m.syncedAfter(at) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: kube-proxy did not sync its node's zone within %v (topology change logged: %v)", ErrTimeout, timeout, logged)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// topologyChangeLog is what kube-proxy v1.37 logs at verbosity 4 as it
// hands its node's new topology labels to the proxiers
// (pkg/proxy/config, NodeTopologyConfig).
const topologyChangeLog = "Calling handler.OnTopologyChange"

// lastLogTime is the time of the last line of kube-proxy's log that holds
// s, from klog's header ("I1202 01:47:18.226748 ..."), which has no year.
func (kp *KubeProxy) lastLogTime(s string) (time.Time, bool) {
	lines := strings.Split(kp.Tail(1<<20), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], s) || len(lines[i]) < 21 {
			continue
		}
		t, err := time.ParseInLocation("0102 15:04:05.000000", lines[i][1:21], time.Local)
		if err != nil {
			return time.Time{}, false
		}
		now := time.Now()
		return t.AddDate(now.Year(), 0, 0), true
	}
	return time.Time{}, false
}

// syncedAfter reports whether every family finished a sync after t.
func (m SyncMetrics) syncedAfter(t time.Time) bool {
	for _, f := range []string{"IPv4", "IPv6"} {
		if !m[f].Last.After(t) {
			return false
		}
	}
	return true
}

// ErrTimeout is returned when kube-proxy does not sync in time.
var ErrTimeout = errors.New("kube-proxy timed out")

// WaitStable dumps with dump every second until three successive dumps
// (two seconds) are equal and ready accepts them, and returns that dump.
// Two seconds, because kube-proxy learns some inputs after its first sync
// (the Node's topology labels come from a separate informer) and then
// resyncs no sooner than its one-second minimum sync period; two equal
// dumps one second apart were seen to miss that resync.
func (kp *KubeProxy) WaitStable(ctx context.Context, timeout time.Duration, dump func() ([]byte, error), ready func([]byte) bool) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	var prev []byte
	same := 0
	for {
		if err := kp.Running(); err != nil {
			return nil, err
		}
		cur, err := dump()
		if err != nil {
			return nil, err
		}
		if prev != nil && bytes.Equal(prev, cur) && ready(cur) {
			same++
		} else {
			same = 0
		}
		if same >= 2 {
			return cur, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kube-proxy's rules not stable after %v", timeout)
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
