package cli

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// The kube-proxy v1.37 /healthz body and a few lines of its /metrics, as
// a fake kube-proxy serves them (the real one: test/conformance).
const (
	fakeHealthz = `{"lastUpdated":"2026-12-07T13:00:00Z","currentTime":"2026-12-07T13:00:01Z","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"2026-12-07T13:00:00Z","healthy":true}}}`
	fakeMetrics = "# HELP kubeproxy_sync_proxy_rules_endpoint_changes_total [ALPHA] Cumulative proxy rules Endpoint changes\n# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_total counter\nkubeproxy_sync_proxy_rules_endpoint_changes_total 0\n"
)

// startNamed runs `sleep` under the name kube-proxy (a link, whose name
// becomes the process's comm) in ns, and returns its PID; it is killed
// when the test ends.
func startNamed(t *testing.T, ns netlab.NS) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "kube-proxy")
	if err := os.Symlink(sleep, link); err != nil {
		t.Fatal(err)
	}
	cmd := ns.Command(t.Context(), link, "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// ip netns exec execs the link in place of itself: the PID stays, and
	// the name changes once it has.
	comm := fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(comm); strings.TrimSpace(string(b)) == "kube-proxy" {
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became kube-proxy", comm)
		}
	}
}

// serveIn answers on addr inside ns with body, as kube-proxy does, or,
// with server set, with the tool's Server header.
func serveIn(t *testing.T, ns netlab.NS, addr, body, server string) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if server != "" {
			w.Header().Set("Server", server)
		}
		fmt.Fprint(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestApplyBesideKubeProxy runs apply on a node where a kube-proxy runs,
// shown by each signal alone: apply refuses with exit 2, names the signal
// and writes nothing, and so does apply --watch when it starts;
// --take-over applies, with a warning; plan says so.
// A kube-proxy in another network namespace, and the tool's own answers
// on kube-proxy's ports, are not one.
func TestApplyBesideKubeProxy(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, n *e2eNode) string // what the message names
	}{
		{"process", func(t *testing.T, n *e2eNode) string {
			return fmt.Sprintf("process kube-proxy (pid %d)", startNamed(t, n.lab.Node()))
		}},
		{"healthz", func(t *testing.T, n *e2eNode) string {
			serveIn(t, n.lab.Node(), "0.0.0.0:10256", fakeHealthz, "")
			return "http://127.0.0.1:10256/healthz answers as kube-proxy"
		}},
		{"metrics", func(t *testing.T, n *e2eNode) string {
			serveIn(t, n.lab.Node(), "127.0.0.1:10249", fakeMetrics, "")
			return "http://127.0.0.1:10249/metrics answers as kube-proxy"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := newE2ENode(t, "nft")
			want := c.setup(t, n)
			before := n.save()
			r := n.run("apply", exampleArgs...)
			if r.code != ExitError || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--take-over") {
				t.Fatalf("apply beside kube-proxy: want exit 2 naming %q and --take-over:\n%s", want, r)
			}
			if after := n.save(); after != before {
				t.Fatalf("the refused apply changed the rules:\n%s", after)
			}
			r = n.run("apply", append(exampleArgs, "--dry-run")...)
			if r.code != ExitOK || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "a real apply would refuse") {
				t.Fatalf("apply --dry-run beside kube-proxy: want exit 0 and a warning naming %q:\n%s", want, r)
			}
			r = n.run("plan", exampleArgs...)
			if r.code != ExitChanges || !strings.Contains(r.stderr, want) {
				t.Fatalf("plan beside kube-proxy: want exit 1 and %q on stderr:\n%s", want, r)
			}
			// apply --watch refuses when it starts, before it asks the
			// API server (there is none: without the check it would wait).
			r = n.run("apply", "--watch", "--node-name=node1", "--healthz-bind-address=", "--metrics-bind-address=")
			if r.code != ExitError || !strings.Contains(r.stderr, want) {
				t.Fatalf("apply --watch beside kube-proxy: want exit 2 naming %q:\n%s", want, r)
			}
			r = n.run("apply", append(exampleArgs, "--take-over")...)
			if r.code != ExitOK || !strings.Contains(r.stderr, want) || !strings.Contains(r.stdout, "Applied") {
				t.Fatalf("apply --take-over: want exit 0, applied, with a warning naming %q:\n%s", want, r)
			}
		})
	}
}

// TestApplyBesideNoKubeProxy: a kube-proxy process in another network
// namespace, the tool's own apply --watch (its Server header) and a
// stranger on kube-proxy's ports are no kube-proxy of this node.
func TestApplyBesideNoKubeProxy(t *testing.T) {
	n := newE2ENode(t, "nft")
	startNamed(t, n.lab.Client())
	serveIn(t, n.lab.Node(), "0.0.0.0:10256", fakeHealthz, "kubectl-svcproxy")
	serveIn(t, n.lab.Node(), "127.0.0.1:10249", "ok\n", "")
	expect(t, n.run("plan", exampleArgs...), ExitChanges)
	expect(t, n.run("apply", exampleArgs...), ExitOK, "Applied")
}

// TestRulesOfAnotherMode applies one mode, then plans and applies another
// in the same namespace: both name the first mode's rules, whether this
// tool wrote them (its record in --state-dir), and the reset that removes
// them, which then silences them.
func TestRulesOfAnotherMode(t *testing.T) {
	for _, c := range []struct{ first, then, seen string }{
		{"nftables", "iptables", "table ip kube-proxy"},
		{"iptables", "nftables", "IPv4 nat KUBE-"},
		{"userspace", "iptables", "IPv4 nat KUBE-PORTALS-"},
	} {
		t.Run(c.first+" then "+c.then, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, n *e2eNode) {
				// First as kube-proxy would leave them: written without
				// this --state-dir, then by the tool itself.
				other := "--state-dir=" + filepath.Join(n.dir, "elsewhere")
				expect(t, n.run("apply", append(exampleArgs, "--mode="+c.first, other)...), ExitOK, "Applied")
				n.expectOtherMode(c.first, c.then, c.seen, "not applied by this tool with this --state-dir")
				// (The apply of the second mode left its rules too.)
				expectBeside(t, n.run("apply", append(exampleArgs, "--mode="+c.first)...), ExitOK, c.then)
				n.expectOtherMode(c.first, c.then, c.seen, "written by this tool's apply --mode="+c.first+" at ")
				expect(t, n.run("reset", "--mode="+c.first), ExitOK)
				expect(t, n.run("plan", append(exampleArgs, "--mode="+c.then)...), ExitOK, "No changes")
			})
		})
	}
}

// expectOtherMode runs plan and apply of mode then on a node that holds
// the rules of mode first, and fails unless both warn of them, naming
// seen and whose, and the reset that removes them.
func (n *e2eNode) expectOtherMode(first, then, seen, whose string) {
	t := n.t.(*testing.T)
	t.Helper()
	want := []string{fmt.Sprintf("the node also holds %s rules (%s", first, seen), whose, "`kubectl svcproxy reset --mode=" + first + "` removes them"}
	for _, sub := range []string{"plan", "apply"} {
		r := n.run(sub, append(exampleArgs, "--mode="+then)...)
		for _, w := range want {
			if r.code == ExitError || !strings.Contains(r.stderr, w) {
				t.Fatalf("%s --mode=%s after %s: want a warning with %q:\n%s", sub, then, first, w, r)
			}
		}
	}
}

// expectBeside is expect for a run on a node that holds the rules of
// another mode on purpose: the warning that names that mode must be on
// stderr, and nothing else.
func expectBeside(t *testing.T, r result, code int, mode string, want ...string) result {
	t.Helper()
	warning := "warning: the node also holds " + mode + " rules "
	if !strings.HasPrefix(r.stderr, warning) || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("want only the warning %q on stderr:\n%s", warning, r)
	}
	r.stderr = ""
	return expect(t, r, code, want...)
}
