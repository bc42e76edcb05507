package kubelet

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
)

// Request loops run this long at most, one request every loopGap: they
// stop by themselves even if the test never stops them.
const (
	loopGap      = 20 * time.Millisecond
	loopRequests = 15000 // 5 minutes at loopGap
)

// loop is a request loop: one agent sending GETs on new connections,
// its answers and failures counted as they arrive.
type loop struct {
	name string
	cmd  *exec.Cmd

	mu       sync.Mutex
	answers  int
	failures []string
	ended    chan struct{}
}

func (l *loop) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		if line := sc.Text(); strings.HasPrefix(line, "error:") {
			l.failures = append(l.failures, time.Now().UTC().Format("15:04:05.000")+" "+line)
		} else {
			l.answers++
		}
		l.mu.Unlock()
	}
}

func (l *loop) count() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.answers, append([]string(nil), l.failures...)
}

// traffic is what runs through a switch: a long-lived connection from the
// client pod to the ClusterIP, and request loops from the node to the
// ClusterIP and from outside to the NodePort.
type traffic struct {
	stream    *stream
	streamCmd *exec.Cmd
	loops     []*loop
	started   time.Time
}

// startTraffic starts the traffic and waits until each part has answered.
func (w *workload) startTraffic(t *testing.T) *traffic {
	t.Helper()
	tr := &traffic{started: time.Now()}
	tr.streamCmd = w.l.KubectlCommand("exec", "client", "--", agentPath, "stream", "http://"+w.clusterIP+"/stream")
	tr.stream = &stream{ended: make(chan struct{})}
	startReader(t, tr.streamCmd, func(r io.Reader) { tr.stream.read(r); close(tr.stream.ended) })
	nodePort := "http://" + kubeletlab.NodeIP + ":" + w.nodePort + "/"
	for _, v := range []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"node -> ClusterIP", w.l.Command(w.agent, "get", "http://"+w.clusterIP+"/", fmt.Sprint(loopRequests), loopGap.String())},
		{"outside -> NodePort", w.l.OutsideCommand(w.agent, "get", nodePort, fmt.Sprint(loopRequests), loopGap.String())},
	} {
		lp := &loop{name: v.name, cmd: v.cmd, ended: make(chan struct{})}
		startReader(t, v.cmd, func(r io.Reader) { lp.read(r); close(lp.ended) })
		tr.loops = append(tr.loops, lp)
	}
	t.Cleanup(tr.stop)
	waitLines(t, tr.stream, 5)
	for range 100 {
		if n, _ := tr.loops[0].count(); n > 0 {
			if m, _ := tr.loops[1].count(); m > 0 {
				return tr
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the request loops got no answer in 10s")
	return nil
}

// startReader starts cmd with its stdout going to read.
func startReader(t *testing.T, cmd *exec.Cmd, read func(io.Reader)) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go read(out)
}

// stop ends every part of the traffic (the agents it started, by PID).
func (tr *traffic) stop() {
	for _, cmd := range append([]*exec.Cmd{tr.streamCmd}, tr.loops[0].cmd, tr.loops[1].cmd) {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
}

// flowing waits d, then checks that every part answered meanwhile and that
// nothing failed so far; it logs the counts.
func (tr *traffic) flowing(t *testing.T, when string, d time.Duration) {
	t.Helper()
	before := tr.counts()
	time.Sleep(d)
	after := tr.counts()
	for i, name := range tr.names() {
		if after[i] <= before[i] {
			t.Errorf("%s: %s answered nothing in %v (%d answers so far)", when, name, d, after[i])
		}
	}
	tr.check(t, when)
}

func (tr *traffic) names() []string {
	return []string{"pod -> ClusterIP (long-lived connection)", tr.loops[0].name, tr.loops[1].name}
}

func (tr *traffic) counts() []int {
	lines, _ := tr.stream.count()
	a, _ := tr.loops[0].count()
	b, _ := tr.loops[1].count()
	return []int{lines, a, b}
}

// check fails the test on any failed request, a broken or switched
// long-lived connection, or a loop that ended early; else it logs the
// figures so far.
func (tr *traffic) check(t *testing.T, when string) {
	t.Helper()
	select {
	case <-tr.stream.ended:
		t.Errorf("%s: the long-lived connection broke", when)
	default:
	}
	tr.stream.mu.Lock()
	err := tr.stream.err
	tr.stream.mu.Unlock()
	if err != nil {
		t.Errorf("%s: %v", when, err)
	}
	failed := 0
	for _, lp := range tr.loops {
		n, failures := lp.count()
		failed += len(failures)
		if len(failures) > 0 {
			t.Errorf("%s: %s: %d of %d requests failed: %v", when, lp.name, len(failures), n+len(failures), failures)
		}
		select {
		case <-lp.ended:
			t.Errorf("%s: %s ended early", when, lp.name)
		default:
		}
	}
	c := tr.counts()
	t.Logf("%s, %v after the traffic started: long-lived connection %d answers, %s %d, %s %d; %d failed requests",
		when, time.Since(tr.started).Round(time.Millisecond), c[0], tr.loops[0].name, c[1], tr.loops[1].name, c[2], failed)
}
