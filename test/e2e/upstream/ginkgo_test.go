package upstream

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// runGinkgo runs e2e.test under the ginkgo runner in the node's network
// and mount namespaces, where a test's process stands on a cluster node as
// upstream's CI runs it: it reaches the API server, ClusterIPs, NodePorts
// and pods directly. The output goes to OUT/e2e.log and the JUnit report
// to OUT/report/; it returns the report's results. Failed tests make
// ginkgo exit non-zero, which is not an error of the run; a run without a
// report is.
func runGinkgo(t *testing.T, l *kubeletlab.Lab, bins, focus, out string) []Result {
	t.Helper()
	report := filepath.Join(out, "report")
	if err := os.RemoveAll(report); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(out, "e2e.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	args := []string{
		"--procs=" + strconv.Itoa(procs(t)), "--timeout=3h", "--no-color",
		"--focus=" + focus, "--skip=" + SkipRegexp(),
		filepath.Join(bins, "e2e.test"), "--",
		"--kubeconfig=" + l.AdminKubeconfig,
		"--kubectl-path=" + filepath.Join(testcluster.NodeBinaries(t), "kubectl"),
		"--provider=skeleton",
		"--report-dir=" + report,
		"--num-nodes=" + strconv.Itoa(len(l.Nodes())),
		"--dns-domain=cluster.local",
		"--node-os-distro=debian",
		// kube-system holds the proxy's DaemonSet, which the suite
		// waits for like any system pod.
		"--minStartupPods=1",
	}
	cmd := l.Command(filepath.Join(bins, "ginkgo"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	t.Logf("running the suite (%d processes); its log: %s", procs(t), logPath)
	runErr := cmd.Run()
	t.Logf("the suite ran for %v (%v)", time.Since(start).Round(time.Second), runErr)
	f, err := os.Open(filepath.Join(report, "junit_01.xml"))
	if err != nil {
		t.Fatalf("no JUnit report (%v); ginkgo: %v; the log's end:\n%s", err, runErr, tail(logPath, 40))
	}
	defer f.Close()
	results, err := ReadJUnit(f, regexp.MustCompile(focus))
	if err != nil {
		t.Fatalf("%v; the log's end:\n%s", err, tail(logPath, 40))
	}
	return results
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n") + "\n"
}
