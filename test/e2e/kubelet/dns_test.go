package kubelet

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/clusterdns"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/kubeletlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// TestClusterDNS gives the lab cluster DNS as kubeadm does (CoreDNS built
// from source, test/clusterdns; kubelet's clusterDNS at the kube-dns
// Service) with the tool as the node's proxy in iptables mode, then checks
// from a pod what Kubernetes' DNS tests rely on: the pod's resolv.conf
// names the kube-dns ClusterIP and the cluster's search path, and names of
// Services, full or short, resolve to their ClusterIPs through it.
func TestClusterDNS(t *testing.T) {
	begin := time.Now()
	testenv.RequireRoot(t)
	testenv.RequireTools(t, "iptables")
	dir := t.TempDir()
	im := buildImages(t, dir)
	product := deploykit.ProductImage(t, dir)
	coredns := clusterdns.Image(t, dir)
	l := kubeletlab.StartWith(t, kubeletlab.Options{
		SandboxImage: pauseImage,
		Images:       append(im.archives, coredns),
		ClusterDNS:   clusterdns.ServiceIP,
	})
	image := l.Import(t, product)
	if len(image) != 1 {
		t.Fatalf("hack/image.sh's archive holds images %v, want one", image)
	}
	kubectl(t, l, "", "apply", "-k", overlay(t, "iptables", image[0]))
	waitDaemonSet(t, l)
	firstSync(t, l)
	clusterdns.Deploy(t, l)

	kubectl(t, l, "", "create", "service", "clusterip", "named", "--tcp=80:8080")
	kubectl(t, l, "", "run", "client", "--image="+agentImage, "--restart=Never", "--command", "--", agentPath, "pause")
	kubectl(t, l, "", "wait", "--for=condition=Ready", "pod/client", "--timeout=180s")
	checkResolvConf(t, l)
	apiserver := clusterIP(t, l, "kubernetes")
	named := clusterIP(t, l, "named")
	for name, want := range map[string]string{
		"kubernetes.default.svc.cluster.local": apiserver,
		"kubernetes.default":                   apiserver, // through the search path
		"named.default.svc.cluster.local":      named,
		"named":                                named,
	} {
		if got := lookup(t, l, name); got != want {
			t.Errorf("pod client: %s resolves to %q, want the ClusterIP %s", name, got, want)
		}
	}
	out, err := l.Kubectl("exec", "client", "--", agentPath, "resolve", "nosuch.default.svc.cluster.local")
	if err == nil || !strings.Contains(out, "no such host") {
		t.Errorf("pod client: a Service that does not exist: want no such host, got %v:\n%s", err, out)
	}
	checkNoUpstream(t, l)
	t.Logf("TestClusterDNS took %v", time.Since(begin).Round(time.Second))
}

// checkResolvConf checks that kubelet gave the pod client (namespace
// default) the cluster's DNS: the kube-dns ClusterIP and the search path
// of a ClusterFirst pod.
func checkResolvConf(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	conf := kubectl(t, l, "", "exec", "client", "--", agentPath, "cat", "/etc/resolv.conf")
	lines := strings.Split(strings.TrimSpace(conf), "\n")
	for _, want := range []string{
		"nameserver " + clusterdns.ServiceIP,
		"search default.svc.cluster.local svc.cluster.local cluster.local",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("pod client's /etc/resolv.conf has no line %q:\n%s", want, conf)
		}
	}
	if strings.Count(conf, "nameserver") != 1 {
		t.Errorf("pod client's /etc/resolv.conf names other nameservers:\n%s", conf)
	}
}

// lookup resolves name in the pod client and returns its addresses, one a
// line. The first lookups may come before the proxy has the kube-dns
// Service's new endpoint: it retries for 30 seconds while they fail.
func lookup(t *testing.T, l *kubeletlab.Lab, name string) string {
	t.Helper()
	var out string
	var err error
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(time.Second) {
		out, err = l.Kubectl("exec", "client", "--", agentPath, "resolve", name)
		if err == nil {
			return strings.TrimSpace(out)
		}
	}
	logs, _ := l.Kubectl("-n", "kube-system", "logs", "deployment/coredns", "--tail=30")
	t.Fatalf("pod client: resolve %s: %v\nCoreDNS:\n%s", name, err, logs)
	return ""
}

// clusterIP returns the ClusterIP of a Service of the namespace default.
func clusterIP(t *testing.T, l *kubeletlab.Lab, service string) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, l, "", "get", "service", service, "-o", "jsonpath={.spec.clusterIP}"))
}

// checkNoUpstream checks the lab's choice for names outside the cluster
// (kubeletlab's nodeResolvConf): CoreDNS forwards them to an address
// where nothing listens, so CoreDNS answers them SERVFAIL ("server
// misbehaving" to Go; a pod's lookup that got no answer would say "i/o
// timeout"), within the forward plugin's 5 seconds, and CoreDNS has not
// restarted (its loop plugin would have exited it on a forwarding loop).
func checkNoUpstream(t *testing.T, l *kubeletlab.Lab) {
	t.Helper()
	start := time.Now()
	out, err := l.Kubectl("exec", "client", "--", agentPath, "resolve", "example.com")
	took := time.Since(start)
	if err == nil || !strings.Contains(out, "server misbehaving") {
		t.Errorf("pod client: example.com: want SERVFAIL, got %v after %v:\n%s", err, took.Round(time.Millisecond), out)
	}
	restarts := kubectl(t, l, "", "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns",
		"-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}")
	if strings.TrimSpace(restarts) != "0" {
		logs, _ := l.Kubectl("-n", "kube-system", "logs", "deployment/coredns", "--previous", "--tail=20")
		t.Errorf("CoreDNS restarted (%s); its previous log:\n%s", restarts, logs)
	}
	t.Logf("pod client: example.com failed in %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
}
