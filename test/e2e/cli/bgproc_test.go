package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bgProc is the built binary running in the background in a lab's node
// namespace, as a long-running command (proxy, apply --watch) runs on a
// node: the test talks to it over its metrics and healthz endpoints and
// reads its log, and stops it with SIGTERM as a kubelet would.
type bgProc struct {
	t    *testing.T
	n    *e2eNode
	what string // for messages: "proxy", "apply --watch"
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited
	code int           // its exit code, once done is closed

	mu  sync.Mutex
	out bytes.Buffer // stdout and stderr
}

// startBackground starts `ip netns exec NODE [env VARS] BIN sub flags
// args...` (see e2eNode.command) with the node's backend and state
// directory; what names it in messages. The test's end stops it and, if
// the test failed, logs its output.
func (n *e2eNode) startBackground(t *testing.T, what string, env []string, sub string, args ...string) *bgProc {
	t.Helper()
	p := &bgProc{t: t, n: n, what: what, done: make(chan struct{})}
	// Not t.Context(): that ends before the cleanup's SIGTERM could.
	p.cmd = n.command(context.Background(), env, sub, args...)
	t.Logf("running %s", strings.Join(p.cmd.Args, " "))
	p.cmd.Stdout, p.cmd.Stderr = p, p
	// Killed with the test binary, should the test itself be killed.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", what, p.output())
		}
	})
	return p
}

func (p *bgProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// output is what the process has written so far, stdout and stderr.
func (p *bgProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop sends SIGTERM to the process (ip netns exec execs it, so it is the
// PID we started), waits up to 10 s, then kills it; it returns the exit
// code. A process that ignores SIGTERM fails the test.
func (p *bgProc) stop() int {
	select {
	case <-p.done:
		return p.code
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("%s did not stop within 10 s of SIGTERM", p.what)
		p.cmd.Process.Kill()
		<-p.done
	}
	return p.code
}

// waitFor polls cond every 50 ms for up to timeout and fails t if it
// never holds or the process exits meanwhile. t is the calling (sub)test:
// only its own goroutine may stop it.
func (p *bgProc) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("%s exited (code %d) while waiting for %s", p.what, p.code, what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// waitLog waits up to timeout for the process to log s.
func (p *bgProc) waitLog(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	p.waitFor(t, fmt.Sprintf("the log line %q", s), timeout, func() bool { return strings.Contains(p.output(), s) })
}

// get fetches http://addr+path from inside the node namespace; on an
// error the code is 0 and the body the error.
func (p *bgProc) get(addr, path string) (int, string) {
	node := p.n.lab.Node()
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

// metric returns the value of a series of /metrics on 127.0.0.1:10249
// (see parseMetric), or -1 when it cannot be read.
func (p *bgProc) metric(name string) float64 {
	code, body := p.get("127.0.0.1:10249", "/metrics")
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
		if i < 0 {
			continue
		}
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
