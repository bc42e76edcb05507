package upstream

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/clusterdns"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/labproxy"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// The run's settings, from hack/e2e-upstream.sh.
const (
	envProxy  = "SVCPROXY_E2E_PROXY"  // a column's name (Columns)
	envSubset = "SVCPROXY_E2E_SUBSET" // 1: Subset, CI's bounded run
	envFocus  = "SVCPROXY_E2E_FOCUS"  // ginkgo's --focus, to rerun a few tests; Focus when empty
	envProcs  = "SVCPROXY_E2E_PROCS"  // parallel ginkgo processes; 3 when empty
	envNodes  = "SVCPROXY_E2E_NODES"  // the lab's nodes; 3 when empty
	envOut    = "SVCPROXY_E2E_OUT"    // where the results file, the log and the report go
)

// PauseRef is the sandbox image: the pause image the suite names, one of
// hack/e2e-images.sh's.
const PauseRef = "registry.k8s.io/pause:3.10.2"

// TestUpstreamE2E runs the selection with the proxy $SVCPROXY_E2E_PROXY
// on a fresh lab and writes its results file. A column other than the
// baseline fails for every test that passed with kube-proxy in the
// committed baseline of kube-proxy in the same mode
// (docs/conformance/results/kube-proxy*.tsv) and does not pass here. Only hack/e2e-upstream.sh sets the variable: the full
// run takes most of an hour.
func TestUpstreamE2E(t *testing.T) {
	name := os.Getenv(envProxy)
	if name == "" {
		t.Skipf("hack/e2e-upstream.sh runs this suite (%s=kube-proxy|kube-proxy-nftables|iptables|nftables)", envProxy)
	}
	col, ok := ColumnByName(name)
	if !ok {
		t.Fatalf("%s=%q: want one of kube-proxy, kube-proxy-nftables, iptables, nftables", envProxy, name)
	}
	testenv.RequireRoot(t)
	focus := Focus
	if os.Getenv(envSubset) == "1" {
		focus = Subset
	}
	if f := os.Getenv(envFocus); f != "" {
		focus = f
	}
	bins := testcluster.E2EBinaries(t)
	listed := listTests(t, bins, focus)
	dir := t.TempDir()
	images := append(e2eImages(t, dir), clusterdns.Image(t, dir))
	l := kubeletlab.StartWith(t, kubeletlab.Options{
		SandboxImage: PauseRef, Images: images, ClusterDNS: clusterdns.ServiceIP, Nodes: nodes(t),
	})
	// The proxy first: CoreDNS reaches the API server through the
	// kubernetes Service's ClusterIP.
	deployProxy(t, l, col, dir)
	clusterdns.Deploy(t, l)
	out := outDir(t)
	start := time.Now()
	reported := runGinkgo(t, l, bins, focus, out)
	run := Run{Meta: [][2]string{
		{"proxy", col.Title},
		{"date", time.Now().UTC().Format("2006-01-02")},
		{"duration", time.Since(start).Round(time.Second).String()},
		{"procs", strconv.Itoa(procs(t))},
		{"nodes", strconv.Itoa(len(l.Nodes()))},
	}, Results: Merge(listed, reported)}
	writeRun(t, filepath.Join(out, name+".tsv"), run)
	logCounts(t, run)
	if !col.KubeProxy {
		if bad := Regressions(baseline(t, col.Baseline), run.Results); len(bad) > 0 {
			t.Errorf("%d tests passed with kube-proxy and do not with %s:\n%s", len(bad), col.Title, strings.Join(bad, "\n"))
		}
	}
}

// listTests returns the tests of the suite that focus selects.
func listTests(t *testing.T, bins, focus string) []string {
	t.Helper()
	out, err := exec.Command(filepath.Join(bins, "e2e.test"), "--list-tests").Output()
	if err != nil {
		t.Fatalf("e2e.test --list-tests: %v", err)
	}
	names, err := ReadList(bytes.NewReader(out), regexp.MustCompile(focus))
	if err != nil || len(names) == 0 {
		t.Fatalf("e2e.test --list-tests: %d tests match %q (%v)", len(names), focus, err)
	}
	t.Logf("%d tests selected, %d of them on the skip list", len(names), countSkipped(names))
	return names
}

func countSkipped(names []string) int {
	n := 0
	for _, name := range names {
		if skipReason(name) != "" {
			n++
		}
	}
	return n
}

// e2eImages runs hack/e2e-images.sh into dir and returns its archives.
func e2eImages(t *testing.T, dir string) []string {
	t.Helper()
	start := time.Now()
	root := repo.MustRoot(t)
	cmd := exec.Command(filepath.Join(root, "hack/e2e-images.sh"), "--out", dir)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/e2e-images.sh: %v\n%s", err, stderr.String())
	}
	t.Logf("hack/e2e-images.sh built the test images in %v", time.Since(start).Round(time.Second))
	return strings.Fields(string(out))
}

// deployProxy starts the column's proxy on the lab: kube-proxy from
// hack/kube-proxy-image.sh, or the tool from hack/image.sh.
func deployProxy(t *testing.T, l *kubeletlab.Lab, col Column, dir string) {
	t.Helper()
	if col.KubeProxy {
		l.Import(t, deploykit.KubeProxyImage(t, dir))
		labproxy.KubeProxy(t, l, col.Mode)
		return
	}
	names := l.Import(t, deploykit.ProductImage(t, dir))
	if len(names) != 1 {
		t.Fatalf("hack/image.sh's archive holds images %v, want one", names)
	}
	labproxy.Tool(t, l, col.Mode, names[0])
}

// procs is the number of parallel ginkgo processes.
func procs(t *testing.T) int { return positive(t, envProcs, 3) }

// nodes is the number of the lab's nodes: three by default, since about
// twenty Service and conntrack tests skip themselves on one node, and the
// health check node port test on fewer than three.
func nodes(t *testing.T) int { return positive(t, envNodes, 3) }

// positive reads a positive number from the environment variable name,
// def when it is empty.
func positive(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// outDir is $SVCPROXY_E2E_OUT, created, or a directory of the test.
func outDir(t *testing.T) string {
	d := os.Getenv(envOut)
	if d == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func writeRun(t *testing.T, path string, run Run) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteRun(&b, run); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("results: %s", path)
}

func logCounts(t *testing.T, run Run) {
	n := map[State]int{}
	for _, r := range run.Results {
		n[r.State]++
		if r.State == Failed {
			t.Logf("FAILED %s: %s", r.Name, r.Reason)
		}
	}
	t.Logf("%s: %d passed, %d failed, %d skipped in %s", run.Get("proxy"), n[Passed], n[Failed], n[Skipped], run.Get("duration"))
}

// baseline reads the committed kube-proxy column.
func baseline(t *testing.T, name string) []Result {
	t.Helper()
	path := resultsPath(t, name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the baseline: %v (hack/e2e-upstream.sh %s --record writes it)", err, name)
	}
	defer f.Close()
	run, err := ReadRun(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return run.Results
}

// resultsPath is a column's committed results file.
func resultsPath(t *testing.T, name string) string {
	return filepath.Join(repo.MustRoot(t), "docs", "conformance", "results", name+".tsv")
}
