package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
)

// survivesRestart opens a long-lived connection from the client pod to
// the ClusterIP, deletes the DaemonSet's pod, waits for the DaemonSet to
// recreate it and for its first sync, and checks that the connection kept
// receiving from the same backend all along.
func (w *workload) survivesRestart(t *testing.T) {
	t.Helper()
	cmd := w.l.KubectlCommand("exec", "client", "--", agentPath, "stream", "http://"+w.clusterIP+"/stream")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{ended: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.read(out); close(s.ended) }()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitLines(t, s, 5)
	old := dsPod(t, w.l)
	kubectl(t, w.l, "", "-n", "kube-system", "delete", "pod", old.name, "--wait")
	waitDaemonSet(t, w.l)
	now := dsPod(t, w.l)
	if now.uid == old.uid {
		t.Fatalf("DaemonSet pod %s not recreated", old.name)
	}
	firstSync(t, w.l)
	before, _ := s.count()
	time.Sleep(2 * time.Second)
	after, backend := s.count()
	select {
	case <-s.ended:
		t.Fatalf("the connection broke when the DaemonSet pod was replaced (%d answers from %s)", after, backend)
	default:
	}
	if after < before+10 || s.err != nil {
		t.Fatalf("the connection stalled after the DaemonSet pod was replaced: %d answers, then %d in 2s; %v", before, after-before, s.err)
	}
	t.Logf("DaemonSet pod %s recreated as %s; the connection to %s kept streaming (%d answers)", old.name, now.name, backend, after)
}

func waitLines(t *testing.T, s *stream, n int) {
	t.Helper()
	for range 100 {
		if got, _ := s.count(); got >= n {
			return
		}
		select {
		case <-s.ended:
			t.Fatal("the stream ended before it started")
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("the stream sent nothing in 10s")
}

type pod struct {
	name, uid string
	started   time.Time
}

// dsPod returns the DaemonSet's one running pod.
func dsPod(t *testing.T, l *kubeletlab.Lab) pod {
	t.Helper()
	pods, err := l.Admin.CoreV1().Pods("kube-system").List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + dsName})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		if r := p.Status.ContainerStatuses[0].State.Running; r != nil {
			return pod{name: p.Name, uid: string(p.UID), started: r.StartedAt.Time}
		}
	}
	t.Fatalf("no running DaemonSet pod:\n%s", describe(l))
	return pod{}
}

// firstSync reports the time from the DaemonSet pod's container start (its
// status, whole seconds) to the tool's first successful sync (the
// runtime's time stamp of its "Synced ... trigger=initial" log line), and
// from its first log line to that sync.
func firstSync(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	p := dsPod(t, l)
	for range 60 {
		out, err := l.Kubectl("-n", "kube-system", "logs", p.name, "--timestamps")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, line := range lines {
			if !strings.Contains(line, "Synced") || !strings.Contains(line, "initial") {
				continue
			}
			synced := stamp(t, line)
			t.Logf("pod %s: container start to first sync %v (from the first log line %v): %s",
				p.name, synced.Sub(p.started).Round(time.Millisecond),
				synced.Sub(stamp(t, lines[0])).Round(time.Millisecond), line)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("pod %s logged no initial sync in 30s:\n%s", p.name, podLog(l))
}

// stamp reads the time stamp that `kubectl logs --timestamps` puts first.
func stamp(t *testing.T, line string) time.Time {
	t.Helper()
	ts, _, _ := strings.Cut(line, " ")
	tm, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatalf("log line without a time stamp: %q", line)
	}
	return tm
}
