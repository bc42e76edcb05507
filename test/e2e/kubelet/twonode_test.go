package kubelet

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/labproxy"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestTwoNodes starts the lab with two nodes, as upstream's Service tests
// that need two Ready schedulable nodes require, and checks what they
// rely on: both Nodes Ready with distinct pod ranges, a pod scheduled on
// each, pods reaching each other across the nodes by pod IP, each node's
// namespace and the outside reaching the other node's pod, and, with the
// real kube-proxy as a DaemonSet on both nodes, a ClusterIP Service
// backed by the pod of the second node reached from the first.
func TestTwoNodes(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	im := buildImages(t, dir)
	kubeProxy := deploykit.KubeProxyImage(t, dir)
	begin := time.Now()
	l := kubeletlab.StartWith(t, kubeletlab.Options{
		SandboxImage: pauseImage, Images: append(im.archives, kubeProxy), Nodes: 2,
	})
	t.Logf("StartWith to both Nodes Ready: %v", time.Since(begin).Round(time.Millisecond))
	names := l.Nodes()
	cidrs := checkNodes(t, l, names)
	ips := make([]string, len(names))
	for i, node := range names {
		ips[i] = startPodOn(t, l, fmt.Sprintf("web-%d", i+1), node)
		if !netip.MustParsePrefix(cidrs[i]).Contains(netip.MustParseAddr(ips[i])) {
			t.Errorf("pod web-%d has IP %s, outside its node %s's pod range %s", i+1, ips[i], node, cidrs[i])
		}
	}
	url := func(i int) string { return "http://" + ips[i] + ":8080/" }
	t.Run("pod to pod", func(t *testing.T) {
		expectAnswers(t, "web-1 -> web-2", exec1(l, "web-1", url(1)), "web-2")
		expectAnswers(t, "web-2 -> web-1", exec1(l, "web-2", url(0)), "web-1")
	})
	t.Run("node to pod", func(t *testing.T) {
		expectAnswers(t, names[0]+" -> web-2", l.NodeCommand(0, im.agent, "get", url(1), "5"), "web-2")
		expectAnswers(t, names[1]+" -> web-1", l.NodeCommand(1, im.agent, "get", url(0), "5"), "web-1")
		expectAnswers(t, "outside -> web-1", l.OutsideCommand(im.agent, "get", url(0), "5"), "web-1")
		expectAnswers(t, "outside -> web-2", l.OutsideCommand(im.agent, "get", url(1), "5"), "web-2")
	})
	t.Run("ClusterIP across nodes", func(t *testing.T) { clusterIPAcross(t, l, im.agent) })
}

// checkNodes checks that the lab's Nodes are exactly names, all Ready and
// schedulable, at their addresses, with distinct pod ranges inside the
// cluster's, and returns those ranges.
func checkNodes(t *testing.T, l *kubeletlab.Lab, names []string) []string {
	t.Helper()
	if want := []string{kubeletlab.NodeName, kubeletlab.NodeName + "-2"}; !slices.Equal(names, want) {
		t.Fatalf("Nodes() = %v, want %v", names, want)
	}
	list, err := l.Admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cidrs := make([]string, len(names))
	for _, node := range list.Items {
		i := slices.Index(names, node.Name)
		if i < 0 {
			t.Fatalf("unexpected Node %s", node.Name)
		}
		cidrs[i] = node.Spec.PodCIDR
		if !isReady(&node) || node.Spec.Unschedulable || len(node.Spec.Taints) > 0 {
			t.Errorf("Node %s: Ready %v, unschedulable %v, taints %v", node.Name, isReady(&node), node.Spec.Unschedulable, node.Spec.Taints)
		}
		if got := internalIP(&node); got != l.NodeIP(i) {
			t.Errorf("Node %s has InternalIP %q, want %s", node.Name, got, l.NodeIP(i))
		}
		t.Logf("Node %s: Ready, InternalIP %s, pod CIDR %s", node.Name, internalIP(&node), node.Spec.PodCIDR)
	}
	cluster := netip.MustParsePrefix(kubeletlab.PodCIDR)
	for i, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || !cluster.Contains(p.Addr()) || slices.Contains(cidrs[:i], c) {
			t.Fatalf("Nodes' pod CIDRs %v: want distinct ranges of %s", cidrs, cluster)
		}
	}
	return cidrs
}

func isReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func internalIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// startPodOn runs the agent's server as pod name, labelled app=name,
// which the scheduler must place on node (by its kubernetes.io/hostname
// label), and returns its IP once it is Ready there.
func startPodOn(t *testing.T, l *kubeletlab.Lab, name, node string) string {
	t.Helper()
	overrides := fmt.Sprintf(`{"spec":{"nodeSelector":{"kubernetes.io/hostname":%q}}}`, node)
	kubectl(t, l, "", "run", name, "--image="+agentImage, "--restart=Never", "--port=8080",
		"--labels=app="+name, "--overrides="+overrides)
	if _, err := l.Kubectl("wait", "--for=condition=Ready", "pod/"+name, "--timeout=180s"); err != nil {
		t.Fatalf("%v\n%s", err, describe(l))
	}
	pod, err := l.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != node {
		t.Fatalf("pod %s runs on %s, want %s", name, pod.Spec.NodeName, node)
	}
	t.Logf("pod %s Ready on %s at %s", name, node, pod.Status.PodIP)
	return pod.Status.PodIP
}

// exec1 is the command that runs the agent in pod to GET url 5 times.
func exec1(l *kubeletlab.Lab, pod, url string) *exec.Cmd {
	return l.KubectlCommand("exec", pod, "--", agentPath, "get", url, "5")
}

// expectAnswers runs an agent's GETs and checks that every one was
// answered by want.
func expectAnswers(t *testing.T, what string, cmd *exec.Cmd, want string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 5 || slices.ContainsFunc(lines, func(s string) bool { return s != want }) {
		t.Errorf("%s: %v: answers %q, want 5 times %s", what, err, lines, want)
		return
	}
	t.Logf("%s: 5 answers from %s", what, want)
}

// clusterIPAcross runs the real kube-proxy (iptables mode) as a DaemonSet,
// which must run a pod on each node and has synced on each, and checks that a NodePort Service
// backed only by the second node's pod answers at its ClusterIP from the
// first node's pod and namespace, and at its NodePort on either node from
// outside (each node's kube-proxy at work).
func clusterIPAcross(t *testing.T, l *kubeletlab.Lab, agent string) {
	labproxy.KubeProxy(t, l, "iptables")
	out := kubectl(t, l, "", "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-proxy", "-o", "jsonpath={.items[*].spec.nodeName}")
	if got := strings.Fields(out); !slices.Equal(sorted(got), l.Nodes()) {
		t.Fatalf("kube-proxy's pods run on %v, want one on each of %v", got, l.Nodes())
	}
	kubectl(t, l, "", "expose", "pod", "web-2", "--name=web-2", "--port=80", "--target-port=8080", "--type=NodePort")
	ip := strings.TrimSpace(kubectl(t, l, "", "get", "service", "web-2", "-o", "jsonpath={.spec.clusterIP}"))
	nodePort := strings.TrimSpace(kubectl(t, l, "", "get", "service", "web-2", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	svc := "http://" + ip + "/"
	eventually(t, "web-1 -> ClusterIP of web-2", func() *exec.Cmd { return exec1(l, "web-1", svc) }, "web-2")
	eventually(t, l.Nodes()[0]+" -> ClusterIP of web-2", func() *exec.Cmd { return l.Command(agent, "get", svc, "5") }, "web-2")
	for i, node := range l.Nodes() {
		url := "http://" + l.NodeIP(i) + ":" + nodePort + "/"
		eventually(t, "outside -> NodePort of "+node, func() *exec.Cmd { return l.OutsideCommand(agent, "get", url, "5") }, "web-2")
	}
}

// eventually waits up to 30s for a first answer from want (each node's
// kube-proxy writes a Service's rules once it has seen its
// EndpointSlice), then demands that every answer come from want.
func eventually(t *testing.T, what string, cmd func() *exec.Cmd, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := cmd().CombinedOutput()
		if strings.Contains(string(out), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no answer from %s in 30s: %s", what, want, out)
		}
		time.Sleep(time.Second)
	}
	expectAnswers(t, what, cmd(), want)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
