// Package ipvs tests `kubectl-svcproxy plan/apply/reset --mode=ipvs` end
// to end: the real binary, built statically on the host, runs in a netlab
// node namespace inside the IPVS test VM (test/vmtest); the tests read
// the kernel back with ipvsadm, ip and ipset.
package ipvs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

func TestMain(m *testing.M) { vmtest.Main(m) }

// guestBinary is where TestInVM puts the binary in the guest.
const guestBinary = "/bin/kubectl-svcproxy"

// TestInVM builds the binary and this package's tests and runs the
// TestE2EIPVS* tests in the VM.
func TestInVM(t *testing.T) {
	if vmtest.InGuest() {
		// Not a missing prerequisite: the host-side test must not recurse
		// in the guest. A plain skip, also under CI.
		t.Skip("vmtest: already inside the VM")
	}
	bin := toolbin.Path(t)
	vmtest.RunWith(t, ".", map[string]string{guestBinary: bin}, "-test.run", "^TestE2EIPVS")
}

// The binary's exit codes (internal/cli); cmdTimeout bounds one command.
const (
	exitOK, exitChanges = 0, 1
	cmdTimeout          = time.Minute
)

// exampleArgs select the embedded example (node1, IPv4) in ipvs mode.
var exampleArgs = []string{"--mode=ipvs", "--example", "--cluster-cidr=10.244.0.0/16", "--family=ipv4"}

// node is a lab whose node namespace the binary runs in; dir holds the
// lock file and the state dir.
type node struct {
	t   *testing.T
	lab *netlab.Lab
	dir string
}

func newNode(t *testing.T) *node {
	t.Helper()
	vmtest.RequireGuest(t)
	return &node{t: t, lab: netlab.New(t), dir: t.TempDir()}
}

// result is one run of the binary.
type result struct {
	cmd, stdout, stderr string
	code                int
}

func (r result) String() string {
	return fmt.Sprintf("%s\nexit %d\n--- stdout:\n%s--- stderr:\n%s", r.cmd, r.code, r.stdout, r.stderr)
}

// run runs `kubectl-svcproxy sub` in the node namespace with the
// hermetic flags (iptables-nft, lock file and state dir in dir) and rest.
func (n *node) run(sub string, rest ...string) result {
	n.t.Helper()
	args := []string{sub, "--iptables-backend=nft", "--state-dir=" + filepath.Join(n.dir, "state")}
	if sub == "apply" || sub == "reset" { // plan and trace take no lock
		args = append(args, "--lock-file="+filepath.Join(n.dir, "lock"))
	}
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	cmd := n.lab.Node().Command(ctx, guestBinary, append(args, rest...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(n.dir, "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{strings.Join(cmd.Args, " "), out.String(), errOut.String(), cmd.ProcessState.ExitCode()}
	if r.code < 0 { // not started, or killed
		r.stderr += fmt.Sprintf("(run: %v)\n", err)
	}
	n.t.Logf("%s %s: exit %d in %v", sub, strings.Join(rest, " "), r.code, time.Since(start).Round(time.Millisecond))
	return r
}

// expect fails unless r exited with code, printed nothing on stderr but
// the warning below, and printed each of want on stdout.
func expect(t *testing.T, r result, code int, want ...string) result {
	t.Helper()
	if r.code != code || withoutTableSizeWarning(r.stderr) != "" {
		t.Fatalf("want exit %d and an empty stderr:\n%s", code, r)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("stdout lacks %q:\n%s", w, r)
		}
	}
	return r
}

// tableSizeWarning is the one line the tool prints, correctly, in the VM:
// its kernel's conntrack table (8192 entries for the VM's memory) is
// smaller than kube-proxy's default, and a test's network namespace cannot
// resize it (test/e2e/conntrackvm tests that part).
var tableSizeWarning = regexp.MustCompile(`(?m)^warning: nf_conntrack_max \(\d+\) and the conntrack hash size \(\d+\) are read-only in this network namespace; .*\n`)

func withoutTableSizeWarning(stderr string) string {
	return tableSizeWarning.ReplaceAllString(stderr, "")
}

// sh runs a tool in the node namespace and returns its stdout.
func (n *node) sh(name string, args ...string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	out, err := n.lab.Node().Run(ctx, name, args...)
	if err != nil {
		n.t.Fatal(err)
	}
	return string(out)
}

// kernel is the state the ipvs mode writes, as the kernel's own tools
// print it: virtual servers, kube-ipvs0's addresses and the ipsets, each
// sorted (a repaired object may come back in another place).
func (n *node) kernel() string {
	n.t.Helper()
	addrs, _ := n.lab.Node().Run(n.t.Context(), "ip", "-o", "addr", "show", "dev", "kube-ipvs0")
	sorted := func(s string) string { return strings.Join(slices.Sorted(strings.Lines(s)), "") }
	return sorted(n.sh("ipvsadm", "-Sn")) + "## kube-ipvs0\n" + sorted(string(addrs)) +
		"## ipset\n" + sorted(n.sh("ipset", "save"))
}

// added returns the lines a plan adds that start with prefix, without
// the "+": "-A -t 10.96.0.10:80 -s rr" for "-A -" (ipvsadm-save form; the
// helper chains' iptables lines read "-A CHAIN").
func added(plan, prefix string) []string {
	var out []string
	for line := range strings.Lines(plan) {
		if l, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "+"); ok && strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
