package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
)

// followWithin bounds how long traffic may take to follow a change of the
// backends once the Deployment's rollout is complete.
const followWithin = 15 * time.Second

// workload is the Deployment "web" (the agent serving its pod name on
// 8080), its ClusterIP + NodePort Service, and the pod "client".
type workload struct {
	l         *kubeletlab.Lab
	agent     string // the agent binary for the node and outside namespaces
	clusterIP string
	nodePort  string
}

// startWorkload creates the Deployment, the Service and the client pod
// with kubectl, as a user does, and waits until they are Ready.
func startWorkload(t *testing.T, l *kubeletlab.Lab, agent string) *workload {
	start := time.Now()
	kubectl(t, l, "", "create", "deployment", "web", "--image="+agentImage, "--replicas=3", "--port=8080")
	kubectl(t, l, "", "expose", "deployment", "web", "--port=80", "--target-port=8080", "--type=NodePort")
	kubectl(t, l, "", "run", "client", "--image="+agentImage, "--restart=Never", "--command", "--", agentPath, "pause")
	if _, err := l.Kubectl("rollout", "status", "deployment/web", "--timeout=180s"); err != nil {
		t.Fatalf("%v\n%s\nkubelet:\n%s", err, describe(l), l.Log("kubelet", 40))
	}
	kubectl(t, l, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=180s")
	w := &workload{l: l, agent: agent}
	w.clusterIP = strings.TrimSpace(kubectl(t, l, "", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
	w.nodePort = strings.TrimSpace(kubectl(t, l, "", "get", "service", "web", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	t.Logf("Deployment web (3 pods), Service %s, NodePort %s and pod client Ready in %v",
		w.clusterIP, w.nodePort, time.Since(start).Round(time.Millisecond))
	return w
}

// backends returns the names of web's pods that are Ready and not
// terminating: exactly those that must answer.
func (w *workload) backends(t *testing.T) []string {
	t.Helper()
	pods, err := w.l.Admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && ready(&p) {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// vantage is where a client sends n requests from, each on a new
// connection; it returns one answer per line ("error: ..." on failure).
type vantage struct {
	name string
	get  func(n int) (string, error)
}

func (w *workload) vantages() []vantage {
	svc := "http://" + w.clusterIP + "/"
	nodePort := "http://" + kubeletlab.NodeIP + ":" + w.nodePort + "/"
	run := func(out []byte, err error) (string, error) { return string(out), err }
	return []vantage{
		{"pod -> ClusterIP", func(n int) (string, error) {
			return w.l.Kubectl("exec", "client", "--", agentPath, "get", svc, fmt.Sprint(n))
		}},
		{"node -> ClusterIP", func(n int) (string, error) {
			return run(w.l.Command(w.agent, "get", svc, fmt.Sprint(n)).Output())
		}},
		{"pod -> NodePort", func(n int) (string, error) {
			return w.l.Kubectl("exec", "client", "--", agentPath, "get", nodePort, fmt.Sprint(n))
		}},
		{"outside -> NodePort", func(n int) (string, error) {
			return run(w.l.OutsideCommand(w.agent, "get", nodePort, fmt.Sprint(n)).Output())
		}},
	}
}

// answers sends 20 requests per backend from v and returns the distinct
// answers, and the failures.
func (w *workload) answers(t *testing.T, v vantage, backends int) (got []string, failures []string) {
	t.Helper()
	out, err := v.get(20 * max(backends, 1))
	if err != nil {
		t.Fatalf("%s: %v\n%s", v.name, err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(line, "error:"):
			failures = append(failures, line)
		case !slices.Contains(got, line):
			got = append(got, line)
		}
	}
	slices.Sort(got)
	return got, failures
}

// reachAll checks that every backend, and nothing else, answers from
// every vantage point.
func (w *workload) reachAll(t *testing.T) {
	t.Helper()
	want := w.backends(t)
	for _, v := range w.vantages() {
		got, failures := w.answers(t, v, len(want))
		if !slices.Equal(got, want) || len(failures) > 0 {
			t.Errorf("%s: answered by %v, want every backend %v; %d failures %v", v.name, got, want, len(failures), failures)
		} else {
			t.Logf("%s: all %d backends answer", v.name, len(want))
		}
	}
}

// scale sets web's replicas and waits for the rollout.
func (w *workload) scale(t *testing.T, n int) {
	t.Helper()
	kubectl(t, w.l, "", "scale", "deployment/web", fmt.Sprintf("--replicas=%d", n))
	kubectl(t, w.l, "", "rollout", "status", "deployment/web", "--timeout=180s")
	for range 60 { // terminating pods leave the list
		if len(w.backends(t)) == n {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("web has backends %v, want %d", w.backends(t), n)
}

// followScale scales web to n and checks that traffic from every vantage
// reaches exactly the new backends within followWithin.
func (w *workload) followScale(t *testing.T, n int) {
	t.Helper()
	w.scale(t, n)
	start := time.Now()
	want := w.backends(t)
	for _, v := range w.vantages() {
		for {
			got, failures := w.answers(t, v, n)
			if slices.Equal(got, want) && len(failures) == 0 {
				t.Logf("scaled to %d: %s: exactly the %d backends answer %v after the rollout",
					n, v.name, n, time.Since(start).Round(time.Millisecond))
				break
			}
			if time.Since(start) > followWithin {
				t.Fatalf("scaled to %d: %s: answered by %v, want %v; failures %v", n, v.name, got, want, failures)
			}
		}
	}
}

// stream is a long-lived HTTP connection from the client pod through the
// ClusterIP, its answers counted as they arrive.
type stream struct {
	mu      sync.Mutex
	lines   int
	backend string
	ended   chan struct{}
	err     error
}

func (s *stream) count() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines, s.backend
}

func (s *stream) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		s.mu.Lock()
		s.lines++
		if s.backend == "" {
			s.backend = sc.Text()
		} else if s.backend != sc.Text() {
			s.err = fmt.Errorf("stream switched from backend %s to %s", s.backend, sc.Text())
		}
		s.mu.Unlock()
	}
}
