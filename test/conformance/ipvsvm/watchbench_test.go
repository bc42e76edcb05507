package ipvsvm

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/conformance"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// What the host tells the guest benchmark: the size it loaded, and how
// many changes the boots before this one made.
var (
	guestServices = flag.Int("ipvsvm.services", 0, "in the VM: the number of synthetic Services the host loaded")
	guestRounds   = flag.Int("ipvsvm.rounds", 0, "in the VM: the endpoint changes made by the boots before")
)

// guestChanges is the number of endpoint changes of one boot.
func guestChanges(n int) int {
	if n < 100 {
		return 3 // CI's run
	}
	return 10
}

// BenchmarkIPVSWatchLatency is conformance.BenchmarkWatchLatency for the
// ipvs mode, which the host kernel lacks: the host loads N synthetic
// Services (10 endpoints each) into the test API server and boots the
// VM, where kube-proxy v1.37.2 with --proxy-mode=ipvs and `kubectl
// svcproxy apply --watch` run side by side, each in a network namespace
// of its own, through qemu's user-mode network (BenchmarkGuestIPVSWatch).
// The guest's figures are reported here under the same names (kp-p50-ms,
// tool-p50-ms, ...; with more than one boot, the mean of the boots'). The
// VM is TCG with one vCPU: the figures compare the two processes, not
// this machine with another. Under TCG kube-proxy took 222 s to its first
// sync of 100 Services (on a loaded host), so the default here is 10
// Services and 3 changes, which CI runs; SVCPROXY_BENCH_SIZES=100,1000
// for more (10 changes each).
func BenchmarkIPVSWatchLatency(b *testing.B) {
	if vmtest.InGuest() {
		// Not a missing prerequisite: the host side must not recurse.
		b.Skip("vmtest: already inside the VM")
	}
	if testing.Short() {
		b.Skip("starts kube-apiserver, etcd and the VM with kube-proxy (-short)")
	}
	for _, n := range benchsize.Sizes(b, 10) {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			files := hostFiles(b, n)
			var boots guestMetrics
			for b.Loop() {
				boots.add(b, bootWatchBench(b, files, n, len(boots.runs)*guestChanges(n)))
			}
			boots.report(b)
		})
	}
}

// hostFiles starts the API server, loads n synthetic Services and
// returns what the guest needs: kube-proxy, the tool and a kubeconfig.
func hostFiles(b *testing.B, n int) map[string]string {
	ctx := b.Context()
	files := map[string]string{guestKubeProxy: testcluster.KubeProxy(b)}
	files[guestTool] = toolbin.Path(b)
	c := testcluster.Start(b)
	objects := conformance.Objects{Client: c.Admin}
	if err := objects.MarkDefaultService(ctx); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := conformance.LoadSynthetic(ctx, c.AdminKubeconfig, n, conformance.SyntheticEndpoints, 16); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d Services and EndpointSlices created in %v", n, time.Since(start).Round(time.Millisecond))
	files[guestKubeconfig] = testcluster.GuestKubeconfig(b, c.AdminKubeconfig, vmtest.HostLoopback)
	return files
}

// bootWatchBench boots the VM once for BenchmarkGuestIPVSWatch and
// returns what it printed.
func bootWatchBench(b *testing.B, files map[string]string, n, rounds int) []byte {
	bin := vmtest.BuildTest(b, ".")
	timeout := 10*time.Minute + time.Duration(n/100)*time.Minute
	var out bytes.Buffer
	res, err := vmtest.Boot(b.Context(), vmtest.Config{
		Init: bin, Files: files, Memory: "2G", UserNet: true, Timeout: timeout,
		Output: io.MultiWriter(b.Output(), &out),
		Args: []string{"-test.run=^$", "-test.bench=^BenchmarkGuestIPVSWatch$", "-test.benchtime=1x",
			"-test.v", "-test.timeout=" + (timeout - 30*time.Second).String(), "-ipvsvm.services=" + strconv.Itoa(n), "-ipvsvm.rounds=" + strconv.Itoa(rounds)},
	})
	if vmtest.IsUnavailable(err) {
		testenv.SkipOrFail(b, "vmtest: cannot boot the VM here: "+err.Error())
	}
	if err != nil || res.Code != 0 {
		b.Fatalf("benchmark in the VM: %v (exit %d); its output is above", err, res.Code)
	}
	return out.Bytes()
}

// guestMetrics are the metrics of every boot's result line.
type guestMetrics struct {
	runs []map[string]float64
}

// add reads the guest benchmark's result line, "BenchmarkGuestIPVSWatch
// 1 <value> <unit> <value> <unit> ...", and keeps its metrics.
func (g *guestMetrics) add(b *testing.B, out []byte) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkGuestIPVSWatch") {
			continue
		}
		run := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil && strings.Contains(f[i+1], "-") {
				run[f[i+1]] = v
			}
		}
		g.runs = append(g.runs, run)
		return
	}
	b.Fatal("the guest printed no result line of BenchmarkGuestIPVSWatch")
}

// report reports each metric's mean over the boots.
func (g *guestMetrics) report(b *testing.B) {
	sums := map[string]float64{}
	for _, run := range g.runs {
		for unit, v := range run {
			sums[unit] += v
		}
	}
	for unit, sum := range sums {
		b.ReportMetric(sum/float64(len(g.runs)), unit)
	}
}

// BenchmarkGuestIPVSWatch runs inside the VM (BenchmarkIPVSWatchLatency
// boots it): kube-proxy and the tool, each in a node namespace of its
// own with an API server bridge, in ipvs mode with the same kube-proxy
// configuration file, measured as conformance.Pair measures them.
func BenchmarkGuestIPVSWatch(b *testing.B) {
	if !vmtest.InGuest() {
		// By design, not a missing prerequisite: BenchmarkIPVSWatchLatency
		// runs this in the VM.
		b.Skip("needs IPVS: runs in the VM (BenchmarkIPVSWatchLatency)")
	}
	n := *guestServices
	if n < 1 {
		b.Fatalf("-ipvsvm.services=%d: the host must say how many Services it loaded", n)
	}
	conformance.SkipRounds(*guestRounds)
	if err := vmtest.SetupUserNet(); err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", guestKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := conformance.SyntheticScenario(n)
	snap, err := fromapi.Snapshot(b.Context(), client, s.Config.NodeName)
	if err != nil {
		b.Fatal(err)
	}
	if got := len(snap.Services) - 1; got != n {
		b.Fatalf("the API server holds %d synthetic Services, the host said %d", got, n)
	}
	bridges := &testcluster.Cluster{Server: cfg.Host}
	changes := guestChanges(n)
	var samples conformance.WatchSamples
	for b.Loop() {
		p := conformance.Pair{guestWatched(b, s, snap, bridges, "kube-proxy"), guestWatched(b, s, snap, bridges, "kubectl-svcproxy")}
		progress("both started")
		limit := 5*time.Minute + time.Duration(n/100)*time.Minute
		if err := p.WaitFirstSync(b.Context(), limit); err != nil {
			b.Fatalf("%v\nkube-proxy's log:\n%s\nthe tool's log:\n%s", err, p[0].Tail(20), p[1].Tail(20))
		}
		progress(fmt.Sprintf("first syncs: kube-proxy %v, tool %v", p[0].FirstSync.Round(time.Second), p[1].FirstSync.Round(time.Second)))
		if err := p.WaitQuiet(b.Context(), limit); err != nil {
			b.Fatal(err)
		}
		progress(fmt.Sprintf("both quiet; %d endpoint changes", changes))
		if err := p.Measure(b.Context(), client, n, conformance.SyntheticEndpoints, changes); err != nil {
			b.Fatal(err)
		}
		samples.Add(p)
	}
	samples.Report(b)
}

// progress prints a step of the guest benchmark on the console as it
// happens (b.Log prints at the end): the run takes minutes under TCG.
func progress(msg string) {
	fmt.Printf("ipvs watch benchmark, %s: %s\n", time.Now().UTC().Format(time.TimeOnly), msg)
}

// guestWatched starts kube-proxy or the tool in a fresh node namespace
// with the scenario's ipvs configuration and a bridge of its own.
func guestWatched(b *testing.B, s *conformance.Scenario, snap *cluster.Snapshot, bridges *testcluster.Cluster, name string) *conformance.Watched {
	ns := conformance.NodeLab(b, s, snap).Node()
	kubeconfig := bridges.NewBridge(b, ns).Kubeconfig(b, guestKubeconfig)
	data, err := s.KubeProxyConfig(conformance.IPVS, kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	config := filepath.Join(b.TempDir(), "kube-proxy.yaml")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		b.Fatal(err)
	}
	var w *conformance.Watched
	if name == "kube-proxy" {
		w, err = conformance.WatchKubeProxy(ns, guestKubeProxy, config, b.TempDir())
	} else {
		w, err = conformance.WatchTool(ns, guestTool, config, b.TempDir())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	return w
}
