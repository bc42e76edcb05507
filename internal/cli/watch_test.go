package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

func TestWatchFlags(t *testing.T) {
	parse := func(args ...string) (*watchFlags, error) {
		cmd := &cobra.Command{Use: "apply", RunE: func(*cobra.Command, []string) error { return nil }}
		var w watchFlags
		w.addFlags(cmd.Flags())
		cmd.Flags().Bool("dry-run", false, "")
		if err := cmd.Flags().Parse(args); err != nil {
			return nil, err
		}
		return &w, w.validate(cmd.Flags(), "dry-run")
	}
	w, err := parse()
	// kube-proxy's defaults.
	if err != nil || w.enabled || w.minSyncPeriod != time.Second || w.syncPeriod != 30*time.Second ||
		w.metricsAddr != "127.0.0.1:10249" || w.healthzAddr != "0.0.0.0:10256" {
		t.Errorf("defaults %+v, %v", w, err)
	}
	if w, err := parse("--watch", "--sync-period=1m", "--min-sync-period=0", "--healthz-bind-address="); err != nil || !w.enabled || w.syncPeriod != time.Minute || w.healthzAddr != "" {
		t.Errorf("--watch with periods: %+v, %v", w, err)
	}
	for args, want := range map[string]string{
		"--sync-period=1m":          "--sync-period needs --watch",
		"--metrics-bind-address=:1": "--metrics-bind-address needs --watch",
		"--watch --dry-run":         "--watch cannot be used with --dry-run",
	} {
		_, err := parse(strings.Fields(args)...)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestREADMEDocumentsWatchFlags holds the watch flags to the README's
// rule before apply registers them (TestREADMEDocumentsEveryFlag then
// covers them too).
func TestREADMEDocumentsWatchFlags(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("apply", pflag.ContinueOnError)
	(&watchFlags{}).addFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(string(readme), "`--"+f.Name) {
			t.Errorf("flag --%s is not documented in README.md", f.Name)
		}
	})
}

// TestWatchRejectsBadPeriods checks runWatch's validation, which fails
// before anything is contacted or served.
func TestWatchRejectsBadPeriods(t *testing.T) {
	c := &common{streams: genericiooptions.NewTestIOStreamsDiscard(), configFlags: genericclioptions.NewConfigFlags(true), proxy: NewProxyFlags()}
	kubeconfig := t.TempDir() + "/kubeconfig"
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600)
	c.configFlags.KubeConfig = &kubeconfig
	sync := func(context.Context, *cluster.Snapshot) (diff.Summary, error) { return diff.Summary{}, nil }
	for _, w := range []watchFlags{
		{enabled: true, minSyncPeriod: time.Minute, syncPeriod: time.Second},
		{enabled: true, syncPeriod: 0},
	} {
		err := c.runWatch(t.Context(), &w, sync)
		if err == nil || !strings.Contains(err.Error(), "sync-period") {
			t.Errorf("%+v: %v, want an error about the periods", w, err)
		}
	}
}

// watchHelperEnv makes the test binary the tool's `apply --watch`
// (TestWatchHelperProcess), for the end-to-end test to run in the lab's
// node namespace.
const watchHelperEnv = "SVCPROXY_WATCH_HELPER"

// TestWatchHelperProcess is not a test: with watchHelperEnv set, it runs
// `apply --watch` with the flags after "--" and exits. It stands in for
// the real binary until apply.go wires --watch (see watchCommandWired).
func TestWatchHelperProcess(t *testing.T) {
	if os.Getenv(watchHelperEnv) == "" {
		t.Skip("the tool's process of TestWatchE2E, not a test")
	}
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	cmd := newWatchHelperCommand(streams)
	cmd.SetArgs(flag.Args()[1:]) // after "apply"
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(ExitCode(err))
}

// newWatchHelperCommand is `apply --watch` in iptables mode, built from the
// same flags and functions as apply: the sync renders the snapshot with
// the proxy flags and reconciles through syncKernel.
func newWatchHelperCommand(streams genericiooptions.IOStreams) *cobra.Command {
	c := &common{streams: streams, configFlags: genericclioptions.NewConfigFlags(true), proxy: NewProxyFlags()}
	var k kernelFlags
	var w watchFlags
	cmd := &cobra.Command{
		Use:           "apply",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := w.validate(cmd.Flags()); err != nil {
				return err
			}
			if !w.enabled {
				return errors.New("the helper runs apply --watch only")
			}
			return c.runWatch(cmd.Context(), &w, c.iptablesSync(&k))
		},
	}
	c.configFlags.AddFlags(cmd.Flags())
	c.proxy.AddFlags(cmd.Flags())
	k.addFlags(cmd.Flags(), true)
	w.addFlags(cmd.Flags())
	return cmd
}

// iptablesSync renders snap in iptables mode and applies it through the
// same backend, lock and plan as apply.
func (c *common) iptablesSync(k *kernelFlags) func(context.Context, *cluster.Snapshot) (diff.Summary, error) {
	return func(ctx context.Context, snap *cluster.Snapshot) (diff.Summary, error) {
		d := &desired{mode: ModeIPTables}
		var err error
		if d.tables, err = c.tables(snap); err != nil {
			return diff.Summary{}, err
		}
		if d.cfg, err = c.proxy.RenderConfig(); err != nil {
			return diff.Summary{}, err
		}
		readNodeSysctls(&d.cfg)
		if d.families, err = c.proxy.families(); err != nil {
			return diff.Summary{}, err
		}
		for _, f := range d.families {
			d.iptables = append(d.iptables, render.IPTables(d.tables.ForFamily(f), d.cfg))
		}
		b, err := c.backend(ctx, k, ModeIPTables)
		if err != nil {
			return diff.Summary{}, err
		}
		p, err := c.sync(ctx, k, b, func() (kernelPlan, error) { return b.plan(ctx, d) }, false, nil)
		if err != nil {
			return diff.Summary{}, err
		}
		return p.summary(), nil
	}
}

// watchCommandWired reports whether apply has --watch: then the tests run
// the real binary instead of the helper process.
func watchCommandWired() bool {
	apply, _, err := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{"apply"})
	return err == nil && apply.Flags().Lookup("watch") != nil
}

// watchApplyCommand returns the apply command, or the helper's until apply
// has --watch.
func watchApplyCommand() *cobra.Command {
	if watchCommandWired() {
		apply, _, _ := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{"apply"})
		return apply
	}
	return newWatchHelperCommand(genericiooptions.NewTestIOStreamsDiscard())
}

// watchTool is `apply --watch` running in a lab's node namespace.
type watchTool struct {
	t    *testing.T
	n    *e2eNode
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed when it has exited
	code int           // its exit code, once done is closed
}

// startWatch starts `apply --watch` with the e2e node's backend, lock and
// state directory, kubeconfig and args, in the node namespace; the test's
// end stops it.
func startWatch(t *testing.T, n *e2eNode, kubeconfig string, args ...string) *watchTool {
	t.Helper()
	rest := append([]string{"--watch", "--kubeconfig=" + kubeconfig}, args...)
	argv := []string{"netns", "exec", n.lab.Node().Name()}
	env := append(os.Environ(), "KUBECONFIG=")
	if watchCommandWired() {
		argv = append(argv, n.bin)
	} else {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		argv = append(argv, self, "-test.run=^TestWatchHelperProcess$", "--")
		env = append(env, watchHelperEnv+"=1")
	}
	w := &watchTool{t: t, n: n, out: &lockedBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command("ip", append(argv, n.args("apply", rest)...)...)
	t.Logf("running %s", strings.Join(w.cmd.Args, " "))
	w.cmd.Env = env
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.cmd.Wait()
		w.code = w.cmd.ProcessState.ExitCode()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.stop()
		if t.Failed() {
			t.Logf("apply --watch output:\n%s", w.output())
		}
	})
	return w
}

// stop sends SIGTERM to the tool's PID (ip netns exec execs it) and
// returns its exit code, killing it after 10 s.
func (w *watchTool) stop() int {
	select {
	case <-w.done:
		return w.code
	default:
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		w.cmd.Process.Kill()
		<-w.done
	}
	return w.code
}

func (w *watchTool) output() string { return w.out.String() }

// waitLog waits up to 30 s for the tool to log s.
func (w *watchTool) waitLog(s string) {
	w.t.Helper()
	waitUntil(w.t, w, fmt.Sprintf("the log line %q", s), 30*time.Second, func() bool { return strings.Contains(w.output(), s) })
}

// get fetches http://addr+path inside the node namespace.
func (w *watchTool) get(addr, path string) (int, string) {
	node := w.n.lab.Node()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			var conn net.Conn
			err := node.Do(func() error {
				var err error
				conn, err = (&net.Dialer{}).DialContext(ctx, network, a)
				return err
			})
			return conn, err
		},
	}}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metric returns the value of a series of /metrics (see parseMetric), or
// -1 when it cannot be read.
func (w *watchTool) metric(name string) float64 {
	code, body := w.get("127.0.0.1:10249", "/metrics")
	if code != http.StatusOK {
		return -1
	}
	return parseMetric(body, name)
}

// parseMetric sums the samples of name in a Prometheus text exposition.
// name may carry labels, {a="x",b="y"}: then only the series having all of
// them count. It returns -1 when no series matches.
func parseMetric(body, name string) float64 {
	base, want, _ := strings.Cut(strings.TrimSuffix(name, "}"), "{")
	sum, found := 0.0, false
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series, labels, _ := strings.Cut(strings.TrimSuffix(line[:i], "}"), "{")
		if series != base || !hasAllLabels(labels, want) {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

func hasAllLabels(have, want string) bool {
	if want == "" {
		return true
	}
	set := map[string]bool{}
	for _, l := range strings.Split(have, ",") {
		set[l] = true
	}
	for _, l := range strings.Split(want, ",") {
		if !set[l] {
			return false
		}
	}
	return true
}

// waitUntil polls cond every 100 ms for up to timeout, failing the test
// (with the tool's output) if it never holds or the tool exits.
func waitUntil(t *testing.T, tool *watchTool, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		select {
		case <-tool.done:
			t.Fatalf("apply --watch exited (%d) while waiting for %s", tool.code, what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, timeout)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the process's writers and the
// test's readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
