package cli

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// soakEnv sets how long TestWatchSoak runs, a Go duration shared by the
// modes it runs in. The default keeps CI bounded; run longer on demand,
// e.g. SVCPROXY_SOAK=30m with a -timeout that fits it.
const (
	soakEnv     = "SVCPROXY_SOAK"
	soakDefault = 2 * time.Minute
	// soakSetup is what each mode needs besides its share: an API server
	// and a lab to start, the final convergence check.
	soakSetup = 2 * time.Minute
)

// The soak's pace. Drift is repaired by the periodic sync, within a sync
// period of the injection, or by an event sync sooner; the bound allows
// two periods and a slow sync on a busy machine.
const (
	soakMinSyncPeriod = time.Second
	soakSyncPeriod    = 5 * time.Second
	soakRepairBound   = 2*soakSyncPeriod + 5*time.Second
	soakDriftEvery    = 8 * time.Second
	soakProbeEvery    = 40 * time.Millisecond
	soakProbeTimeout  = time.Second
	soakChurnEvery    = 100 * time.Millisecond
	soakChurnSlots    = 20
	// soakAppliedBound is how long a change made after an API server
	// restart may take to reach the kernel: client-go's reflectors back
	// off up to 30 s while the server is away.
	soakAppliedBound = 60 * time.Second
	// soakRSSSlopeLimit bounds the slope of the tool's RSS over the
	// second half of the run, in KB per minute: a leak of 4 KB per event
	// (the soak makes some 600 a minute), or of the state's size per
	// sync, shows above it; a 24-minute run measured +7 and 0 KB/min
	// over 6-minute windows.
	soakRSSSlopeLimit = 2048
	// soakRSSStep is a one-off rise of the RSS, in KB, that is not a
	// leak: the informers relisting after a restart, the heap's next
	// size class. In a least-squares slope a step h in the middle of a
	// window w weighs 1.5 h/w, so the limit allows one such step: it
	// matters in short runs only (w = 30 s in CI: 8 MB/min in all; 7.5
	// min in a 30-minute run: 2.4 MB/min).
	soakRSSStep = 2048
)

// soakBackends are the pods that serve every soak Service, by IP.
var soakBackends = map[string]string{
	"10.244.0.11": "backend-11", "10.244.1.12": "backend-12",
	"10.244.0.13": "backend-13", "10.244.1.14": "backend-14",
}

// A soak Service: the unchanged ones, probed all along (steady) or broken
// by hand (drift targets), and one made after each restart.
type soakService struct {
	name, ip  string
	endpoints []string
}

var (
	soakSteady = []soakService{
		{"steady-0", "10.96.10.1", []string{"10.244.0.11", "10.244.1.12"}},
		{"steady-1", "10.96.10.2", []string{"10.244.1.12", "10.244.0.13"}},
		{"steady-2", "10.96.10.3", []string{"10.244.0.13", "10.244.1.14"}},
	}
	soakDriftTargets = []soakService{
		{"drift-0", "10.96.11.1", []string{"10.244.1.14", "10.244.0.11"}},
		{"drift-1", "10.96.11.2", []string{"10.244.0.11"}},
	}
)

func restartService(i int) soakService {
	return soakService{fmt.Sprintf("restart-%d", i), fmt.Sprintf("10.96.12.%d", i+1), []string{"10.244.1.12"}}
}

// TestWatchSoak runs `apply --watch` for minutes (SVCPROXY_SOAK) against
// the test API server while Services and EndpointSlices churn, the API
// server restarts and rules are deleted by hand, and checks what must
// hold all along: no connection to an unchanged Service fails, every
// drift is repaired, the tool's memory stays flat, and in the end the
// kernel equals a fresh render of the API state. The figures are logged.
func TestWatchSoak(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so a
	// plain skip, also under CI.
	if testing.Short() {
		t.Skip("runs for minutes (" + soakEnv + ")")
	}
	total := soakDuration(t)
	forEachMode(t, func(t *testing.T, m e2eMode) {
		s := startSoak(t, m)
		s.run(total / time.Duration(len(e2eModes)))
		s.finish()
	})
}

// soakDuration reads SVCPROXY_SOAK and checks that the test's deadline
// leaves room for it.
func soakDuration(t *testing.T) time.Duration {
	d := soakDefault
	if v := os.Getenv(soakEnv); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 10*time.Second {
			t.Fatalf("%s=%q: want a duration of at least 10s", soakEnv, v)
		}
	}
	need := d + time.Duration(len(e2eModes))*soakSetup
	if dl, ok := t.Deadline(); ok && time.Until(dl) < need {
		t.Fatalf("%s=%v needs about %v: run go test with -timeout=%v or more", soakEnv, d, need, need.Round(time.Minute))
	}
	t.Logf("soaking for %v (%s), split between the modes", d, soakEnv)
	return d
}

// soak is one mode's run: the node, the API server, the tool and the load.
type soak struct {
	t          *testing.T
	n          *e2eNode
	m          e2eMode
	c          *testcluster.Cluster
	admin      kubernetes.Interface
	kubeconfig string // the tool's, through the bridge
	tool       *bgProc
	start      time.Time

	gate    sync.RWMutex // held for writing while the API server restarts
	probers []*prober
	churn   *churner
	rss     *rssSampler

	drifts         int           // injected, each repaired
	driftMax       time.Duration // the slowest repair
	driftSum       time.Duration
	restarts       []string // what each restart measured
	churnAtRestart int64    // churn operations done when the last restart ended
	before         map[string]float64
}

// startSoak builds the lab and the cluster, creates the unchanged
// Services and starts the tool; it returns once the tool's first sync
// made them answer.
func startSoak(t *testing.T, m e2eMode) *soak {
	s := &soak{t: t, m: m, n: newE2ENode(t, "nft")} // skips (fails under CI) unless root with iptables-nft
	s.c = testcluster.StartWithRBAC(t)
	s.c.Apply(t, clusterE2EObjects) // node1, and web, which stays as it is
	for ip, name := range soakBackends {
		if err := s.n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	s.admin = fastClient(t, s.c.AdminKubeconfig)
	for _, svc := range slices.Concat(soakSteady, soakDriftTargets) {
		if err := createService(t.Context(), s.admin, svc.name, svc.ip, svc.endpoints...); err != nil {
			t.Fatal(err)
		}
	}
	s.kubeconfig = s.c.NewBridge(t, s.n.lab.Node()).Kubeconfig(t, s.c.UserKubeconfig)
	s.tool = startWatch(t, s.n, s.kubeconfig, append(m.args(), soakNodeFlags...)...)
	s.tool.waitLog(t, "Caches synced", 30*time.Second)
	for _, svc := range slices.Concat(soakSteady, soakDriftTargets) {
		s.waitAnswers(svc, 20*time.Second)
	}
	s.before = s.metrics()
	return s
}

// soakNodeFlags are the tool's flags besides the mode's: node, periods,
// the metrics (in the node namespace).
var soakNodeFlags = []string{
	"--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4",
	"--min-sync-period=" + soakMinSyncPeriod.String(), "--sync-period=" + soakSyncPeriod.String(),
	"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256",
}

// waitAnswers waits until svc's ClusterIP answers from one of its
// endpoints, dialing again and again: a single dial may time out on a
// busy machine (see soakProbe).
func (s *soak) waitAnswers(svc soakService, timeout time.Duration) {
	s.t.Helper()
	dst := netip.MustParseAddrPort(svc.ip + ":80")
	s.tool.waitFor(s.t, svc.name+" to answer at "+svc.ip, timeout, func() bool {
		got, err := s.n.lab.Client().DialTCP(s.t.Context(), dst, soakProbeTimeout)
		return err == nil && slices.ContainsFunc(svc.endpoints, func(ip string) bool { return soakBackends[ip] == got })
	})
}

// run starts the load, then breaks rules and restarts the API server on
// schedule for d, and stops the load.
func (s *soak) run(d time.Duration) {
	ctx, cancel := context.WithCancel(s.t.Context())
	var wg sync.WaitGroup
	// Also when the schedule fails the test: the load must not outlive it.
	defer wg.Wait()
	defer cancel()
	s.start = time.Now()
	for _, svc := range soakSteady {
		var backends []string
		for _, ip := range svc.endpoints {
			backends = append(backends, soakBackends[ip])
		}
		p := &prober{name: svc.name, dst: netip.MustParseAddrPort(svc.ip + ":80"), backends: backends}
		s.probers = append(s.probers, p)
		wg.Go(func() { p.run(ctx, s.n.lab.Client(), s.start, soakProbeEvery, soakProbeTimeout) })
	}
	s.churn = newChurner(s.admin, &s.gate, soakChurnSlots, slices.Sorted(maps.Keys(soakBackends)))
	wg.Go(func() { s.churn.run(ctx, soakChurnEvery) })
	s.rss = &rssSampler{pid: s.tool.cmd.Process.Pid, start: s.start}
	wg.Go(func() { s.rss.run(ctx, max(time.Second, d/300)) })
	s.schedule(d)
}

// schedule injects a drift every soakDriftEvery and restarts the API
// server at evenly spaced times (one, and one more per two minutes). The
// run goes on for at least two sync periods after the last restart, for
// the churn to go on after it.
func (s *soak) schedule(d time.Duration) {
	var restartAt []time.Duration
	for k, r := 1, 1+int(d/(2*time.Minute)); k <= r; k++ {
		restartAt = append(restartAt, d*time.Duration(k)/time.Duration(r+1))
	}
	nextDrift := time.Now().Add(soakDriftEvery)
	for end := d; time.Since(s.start) < end; {
		switch {
		case len(restartAt) > 0 && time.Since(s.start) >= restartAt[0]:
			restartAt = restartAt[1:]
			s.restart()
			end = max(end, time.Since(s.start)+2*soakSyncPeriod)
		case time.Now().After(nextDrift):
			s.drift()
			nextDrift = time.Now().Add(soakDriftEvery)
		default:
			time.Sleep(200 * time.Millisecond)
		}
		select {
		case <-s.tool.done:
			s.t.Fatalf("apply --watch exited (code %d) during the soak", s.tool.code)
		default:
		}
	}
}
