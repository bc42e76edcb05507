package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/toolbin"
)

// The end-to-end tests run the real binary (built once, test/toolbin) inside a
// netlab node namespace with `ip netns exec`, as an operator runs it on a
// node. They never touch the test machine's own namespace or its iptables:
// every run gets --lock-file and --state-dir inside t.TempDir(), and all
// traffic stays between lab namespaces.

// e2eBackends are the iptables backends every end-to-end test runs with.
var e2eBackends = []string{"legacy", "nft"}

// exampleArgs select the embedded example (node1), IPv4 only.
var exampleArgs = []string{"--example", "--cluster-cidr=10.244.0.0/16", "--family=ipv4"}

// cmdTimeout bounds one run of the binary or of iptables.
const cmdTimeout = 30 * time.Second

// The binary's exit codes, its contract with scripts (kubectl diff's): no
// changes, changes (plan), an error.
const (
	ExitOK      = 0
	ExitChanges = 1
	ExitError   = 2
)

// binary is the kubectl-svcproxy under test, built once (test/toolbin).
func binary(t testing.TB) string {
	t.Helper()
	return toolbin.Path(t)
}

// run runs the binary in the test's own namespace, for what reads no
// kernel (render); stdin is its standard input.
func run(t testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "no-kubeconfig"))
	r := runCmd(cmd)
	return r.stdout, r.stderr, r.code
}

// e2eNode is a lab whose node namespace the binary runs in, with one
// backend.
type e2eNode struct {
	t       testing.TB
	lab     *netlab.Lab
	backend string
	bin     string
	dir     string // lock file, state dir, snapshot files
}

// forEachBackend runs fn in parallel subtests, one per backend, each with
// a fresh lab. The calling test runs in parallel with the other end-to-end
// tests, so their labs are built while the binary links.
func forEachBackend(t *testing.T, fn func(t *testing.T, n *e2eNode)) {
	t.Parallel()
	for _, b := range e2eBackends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, newE2ENode(t, b))
		})
	}
}

func newE2ENode(t testing.TB, backend string) *e2eNode {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "ip", "iptables-"+backend, "iptables-"+backend+"-save", "iptables-"+backend+"-restore")
	n := &e2eNode{t: t, backend: backend, dir: t.TempDir()}
	n.lab = netlab.New(t)
	n.bin = binary(t)
	return n
}

func (n *e2eNode) lockFile() string { return filepath.Join(n.dir, "svcproxy.lock") }

// args puts the backend and the hermetic kernel flags after the
// subcommand; plan takes no lock (trace --kernel does).
func (n *e2eNode) args(sub string, rest []string) []string {
	a := []string{sub, "--iptables-backend=" + n.backend, "--state-dir=" + filepath.Join(n.dir, "state")}
	if sub == "apply" || sub == "reset" || sub == "trace" {
		a = append(a, "--lock-file="+n.lockFile())
	}
	return append(a, rest...)
}

// command is `ip netns exec NODE [env VARS...] BIN sub flags... rest...`.
func (n *e2eNode) command(ctx context.Context, env []string, sub string, rest ...string) *exec.Cmd {
	argv := []string{"netns", "exec", n.lab.Node().Name()}
	if len(env) > 0 {
		argv = append(append(argv, "env"), env...)
	}
	argv = append(argv, n.bin)
	cmd := exec.CommandContext(ctx, "ip", append(argv, n.args(sub, rest)...)...)
	// No kubeconfig of the test machine leaks in.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(n.dir, "no-kubeconfig"))
	return cmd
}

// run runs the binary in the node namespace and returns what it did.
func (n *e2eNode) run(sub string, rest ...string) result {
	return n.runEnv(nil, sub, rest...)
}

// runEnv is run with environment variables set by env(1).
func (n *e2eNode) runEnv(env []string, sub string, rest ...string) result {
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	return runCmd(n.command(ctx, env, sub, rest...))
}

// result is one run of the binary.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int
	took   time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%s\nexit %d after %v\n--- stdout:\n%s--- stderr:\n%s",
		strings.Join(r.args, " "), r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

func runCmd(cmd *exec.Cmd) result {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{args: cmd.Args, took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		r.code = -1
		errOut.WriteString("(run: " + err.Error() + ")\n")
	}
	r.stdout, r.stderr = out.String(), errOut.String()
	return r
}

// expect fails the test unless r exited with code, printed each of want
// on stdout, and, unless it failed, nothing on stderr.
func expect(t *testing.T, r result, code int, want ...string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d:\n%s", code, r)
	}
	if code != ExitError && r.stderr != "" {
		t.Fatalf("warnings on stderr:\n%s", r)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("stdout lacks %q:\n%s", w, r)
		}
	}
	return r
}

// ipt runs iptables of the node's backend in the node namespace.
func (n *e2eNode) ipt(args ...string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	if _, err := n.lab.Node().Run(ctx, "iptables-"+n.backend, append([]string{"-w"}, args...)...); err != nil {
		n.t.Fatal(err)
	}
}

// save returns the node's IPv4 iptables-save output (of the given tables,
// or all) without its '#' comment lines, which carry timestamps, and with
// the chains' packet counters zeroed: they count traffic, such as a
// connection to 127.0.0.1 in the namespace, not rules.
//
// With no tables it reads filter and nat first: in the legacy backend,
// reading a table instantiates it (empty, policies ACCEPT) in the
// namespace, so every reader of those tables, plan and --dry-run included,
// would otherwise seem to have added them.
func (n *e2eNode) save(tables ...string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	if len(tables) == 0 {
		n.save("filter", "nat")
		tables = []string{""}
	}
	var b strings.Builder
	for _, tb := range tables {
		var args []string
		if tb != "" {
			args = []string{"-t", tb}
		}
		out, err := n.lab.Node().Run(ctx, "iptables-"+n.backend+"-save", args...)
		if err != nil {
			n.t.Fatal(err)
		}
		for line := range strings.Lines(string(out)) {
			if !strings.HasPrefix(line, "#") {
				b.WriteString(countersRE.ReplaceAllString(line, "$1[0:0]"))
			}
		}
	}
	return b.String()
}

// countersRE matches a chain line's packet and byte counters.
var countersRE = regexp.MustCompile(`^(:\S+ \S+ )\[[0-9]+:[0-9]+\]`)

// ownedChainRE matches the per-service and per-endpoint chains.
var ownedChainRE = regexp.MustCompile(`(?m)^:KUBE-(SVC|SVL|EXT|FW|SEP)-[A-Z0-9]+ `)

// sortedKeys returns the keys of a Spread result in order.
func sortedKeys(m map[string]int) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
