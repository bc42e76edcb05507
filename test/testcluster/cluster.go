// Package testcluster runs a real kube-apiserver and etcd on 127.0.0.1 for
// tests, so that they talk to the same API server, authentication and RBAC
// as in a real cluster. The binaries are built from the Go module proxy by
// hack/testcluster/build.sh (from the hack/tools module) and cached under
// _cache/testcluster/<version>/.
//
// There is no controller manager, scheduler or kubelet: tests write the
// Nodes and EndpointSlices themselves (test/kubeletlab adds them, with
// WithNode, for a real node). kube-apiserver itself creates the
// default/kubernetes Service (without endpoints: it advertises 127.0.0.1,
// which may not be an endpoint) and the default ServiceCIDR.
//
// StopAPIServer and StartAPIServer restart kube-apiserver on the same
// address and etcd, as a control-plane upgrade does, for tests of clients
// that must live through it.
package testcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// ServiceCIDR and ServiceCIDRv6 are the cluster's dual-stack
// --service-cluster-ip-range, IPv4 first (the default/kubernetes Service
// takes the first IPv4 address). The IPv6 range holds the golden
// scenarios' fd00:96::/112 ClusterIPs.
const (
	ServiceCIDR   = "10.96.0.0/16"
	ServiceCIDRv6 = "fd00:96::/112"
)

// Cluster is a running etcd and kube-apiserver, stopped when the test ends.
type Cluster struct {
	// Server is kube-apiserver's URL, https://127.0.0.1:<port>.
	Server string
	// AdminKubeconfig authenticates as AdminUser (system:masters).
	AdminKubeconfig string
	// UserKubeconfig authenticates as User, which has no rights until a
	// test binds a role to it.
	UserKubeconfig string
	// OtherKubeconfig authenticates as OtherUser, also without rights.
	OtherKubeconfig string
	// Admin is a client for AdminUser.
	Admin kubernetes.Interface

	dir       string // temporary files, removed when the test ends
	caFile    string // the CA of kube-apiserver's self-signed serving certificate
	apiserver *Process
	opts      *options

	// How kube-apiserver was started, for StartAPIServer.
	apiserverBin  string
	apiserverArgs []string
	restarts      int
}

// Start builds the binaries if needed, starts etcd and kube-apiserver on
// 127.0.0.1 and waits until kube-apiserver is ready and has created the
// default/kubernetes Service. Both processes are stopped, and their files
// removed, when the test ends.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	bin := binaries(t)
	begin := time.Now()
	c := &Cluster{dir: t.TempDir(), opts: newOptions(opts)}
	users := newUsers()
	if err := writeTokenFile(filepath.Join(c.dir, "tokens.csv"), users); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	if err := writeServiceAccountKey(filepath.Join(c.dir, "sa.key")); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	ports := []int{2379, 2380, APIServerPort}
	if c.opts.host == "" {
		ports = freePorts(t, 3)
	}
	etcdURL := c.startEtcd(t, bin, ports[0], ports[1])
	c.startAPIServer(t, bin, ports[2], etcdURL)

	c.AdminKubeconfig = c.WriteKubeconfig(t, AdminUser, users[0].token)
	c.UserKubeconfig = c.WriteKubeconfig(t, User, users[1].token)
	c.OtherKubeconfig = c.WriteKubeconfig(t, OtherUser, users[2].token)
	// The kubeconfigs name the CA file that kube-apiserver writes first.
	if err := waitFor(c.apiserver, startWaits, func(context.Context) error { _, err := os.Stat(c.caFile); return err }); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	restConfig.Dial = c.opts.dial
	if c.Admin, err = kubernetes.NewForConfig(restConfig); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	if err := waitFor(c.apiserver, startWaits, c.ready); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Logf("testcluster: kube-apiserver ready at %s in %v", c.Server, time.Since(begin).Round(time.Millisecond))
	return c
}

// startEtcd starts etcd with a fresh data directory and returns its
// client URL. fsync is off: the data is thrown away after the test.
func (c *Cluster) startEtcd(t testing.TB, bin string, clientPort, peerPort int) string {
	t.Helper()
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.startProcess(t, "etcd", filepath.Join(bin, "etcd"), filepath.Join(c.dir, "etcd.log"),
		"--name=testcluster",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testcluster="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	return clientURL
}

// startAPIServer starts kube-apiserver with a self-signed serving
// certificate, token authentication and RBAC.
func (c *Cluster) startAPIServer(t testing.TB, bin string, port int, etcdURL string) {
	t.Helper()
	certDir := filepath.Join(c.dir, "certs")
	c.Server = fmt.Sprintf("https://%s", net.JoinHostPort(c.host(), fmt.Sprint(port)))
	// With --cert-dir, kube-apiserver writes a certificate for its advertise
	// address (and localhost) followed by the CA that signed it.
	c.caFile = filepath.Join(certDir, "apiserver.crt")
	saKey := filepath.Join(c.dir, "sa.key")
	c.apiserverBin = filepath.Join(bin, "kube-apiserver")
	c.apiserverArgs = []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback advertise address cannot be an endpoint of
		// default/kubernetes: that Service has no endpoints here.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + certDir,
		"--etcd-servers=" + etcdURL,
		"--token-auth-file=" + filepath.Join(c.dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + ServiceCIDR + "," + ServiceCIDRv6,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		// No controller manager creates the token that this plugin would
		// give Pods; Services need neither.
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
		// As kubeadm's control plane: the shipped DaemonSet is
		// privileged, like kube-proxy's.
		"--allow-privileged=true",
	}
	if c.opts.host != "" {
		c.nodeFlags()
	}
	c.apiserver = c.startProcess(t, "kube-apiserver", c.apiserverBin, filepath.Join(c.dir, "kube-apiserver.log"), c.apiserverArgs...)
}

// StopAPIServer stops kube-apiserver as a control-plane restart does
// (SIGTERM, SIGKILL after 10 s) and waits until it has exited. etcd keeps
// running with the cluster's data. Until StartAPIServer, clients see their
// connections closed and new ones refused.
func (c *Cluster) StopAPIServer() { c.apiserver.Stop() }

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags: the same address, etcd, serving certificate (kept in the
// certificate directory) and tokens, so every kubeconfig and client keeps
// working. It waits until the server is ready. The new process is stopped
// when t ends, so t must outlive the cluster's use. Its log is
// kube-apiserver.N.log, N counting the restarts.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	if c.apiserver.Running() == nil {
		t.Fatalf("testcluster: StartAPIServer: kube-apiserver is running")
	}
	begin := time.Now()
	c.restarts++
	log := filepath.Join(c.dir, fmt.Sprintf("kube-apiserver.%d.log", c.restarts))
	c.apiserver = c.startProcess(t, "kube-apiserver", c.apiserverBin, log, c.apiserverArgs...)
	if err := waitFor(c.apiserver, startWaits, c.ready); err != nil {
		t.Fatalf("testcluster: restart: %v", err)
	}
	t.Logf("testcluster: kube-apiserver ready again in %v", time.Since(begin).Round(time.Millisecond))
}

// ready reports whether /readyz answers ok and default/kubernetes exists.
func (c *Cluster) ready(ctx context.Context) error {
	body, err := c.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %v: %s", err, body)
	}
	_, err = c.Admin.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	return err
}

// Apply runs the real `kubectl apply` as AdminUser with manifest as input.
func (c *Cluster) Apply(t testing.TB, manifest string) {
	t.Helper()
	c.Kubectl(t, manifest, "apply", "-f", "-")
}

// Kubectl runs the real kubectl as AdminUser and returns its output.
func (c *Cluster) Kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		testenv.SkipOrFail(t, "testcluster: no kubectl on PATH")
	}
	args = append([]string{"--kubeconfig=" + c.AdminKubeconfig}, args...)
	cmd := exec.Command(kubectl, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args[1:], " "), err, out)
	}
	return string(out)
}
