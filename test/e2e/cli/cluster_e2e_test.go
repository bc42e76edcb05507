package cli

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// clusterE2EObjects is web (ClusterIP 10.96.0.10:80 -> 8080) with two
// endpoints, one on node1 and one on node2, and node1 itself.
const clusterE2EObjects = `
apiVersion: v1
kind: Node
metadata:
  name: node1
status:
  addresses:
  - {type: InternalIP, address: 192.168.77.10}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.0.10
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
---
` + clusterE2ESliceHeader + `
- addresses: [10.244.0.11]
  conditions: {ready: true}
  nodeName: node1
- addresses: [10.244.1.12]
  conditions: {ready: true}
  nodeName: node2
`

// clusterE2ESliceHeader is web's EndpointSlice up to its endpoint list.
const clusterE2ESliceHeader = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports:
- {name: http, port: 8080, protocol: TCP}
endpoints:`

// clusterE2EScaled is web's EndpointSlice after a scale-down to the pod on
// node2.
const clusterE2EScaled = clusterE2ESliceHeader + `
- addresses: [10.244.1.12]
  conditions: {ready: true}
  nodeName: node2
`

// TestClusterE2E runs the documented cron workflow against a real
// kube-apiserver: `kubectl svcproxy snapshot` where the API server is
// reachable (the root namespace: it listens on 127.0.0.1 there) as the
// cluster creates web, scales it down and deletes it; then, in each mode,
// `apply -f` of those snapshots in turn inside a lab's node namespace,
// checking that the traffic follows them.
func TestClusterE2E(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	nodes := map[string]*e2eNode{}
	for _, m := range e2eModes {
		n := newE2ENode(t, "nft") // skips (fails under CI) unless root with iptables-nft
		for ip, name := range map[string]string{"10.244.0.11": "web-11", "10.244.1.12": "web-12"} {
			if err := n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
				t.Fatal(err)
			}
		}
		nodes[m.name()] = n
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		testenv.SkipOrFail(t, "no kubectl on PATH")
	}
	c := testcluster.StartWithRBAC(t)
	c.Apply(t, clusterE2EObjects)

	dir, bin := t.TempDir(), binary(t)
	// a) Both endpoints.
	created := clusterSnapshot(t, kubectl, bin, c.UserKubeconfig, filepath.Join(dir, "created.yaml"), func(s string) bool {
		return strings.Contains(s, "10.244.0.11") && strings.Contains(s, "10.244.1.12")
	})
	// b) Scaled down to the pod on node2.
	c.Apply(t, clusterE2EScaled)
	scaled := clusterSnapshot(t, kubectl, bin, c.UserKubeconfig, filepath.Join(dir, "scaled.yaml"), func(s string) bool {
		return !strings.Contains(s, "10.244.0.11") && strings.Contains(s, "10.244.1.12")
	})
	// c) web deleted.
	c.Kubectl(t, "", "delete", "-n", "default", "service/web", "endpointslice/web-1")
	deleted := clusterSnapshot(t, kubectl, bin, c.UserKubeconfig, filepath.Join(dir, "deleted.yaml"), func(s string) bool {
		return !strings.Contains(s, "10.96.0.10") && !strings.Contains(s, "10.244.1.12")
	})

	forEachMode(t, func(t *testing.T, m e2eMode) {
		n := nodes[m.name()]
		apply := func(file string) []string {
			t.Helper()
			args := append([]string{"-f", file, "--node-name=node1", "--cluster-cidr=10.244.0.0/16", "--family=ipv4"}, m.args()...)
			expect(t, n.run("apply", args...), ExitOK, m.applied(n))
			return args
		}
		apply(created)
		assertSpread(t, n, "web-11", "web-12")
		chain, _ := serviceChain(t, n, m, webClusterIP.Addr().String())

		expect(t, n.run("plan", apply(scaled)...), ExitOK, "No changes")
		assertSpread(t, n, "web-12")

		apply(deleted)
		_, err := n.lab.Client().DialTCP(t.Context(), webClusterIP, netlab.DefaultTimeout)
		if err == nil || !(netlab.IsTimeout(err) || netlab.IsRefused(err)) {
			t.Fatalf("%s after web was deleted: got %v, want a timeout or a refusal", webClusterIP, err)
		}
		assertServiceGone(t, n, m, chain, webClusterIP.Addr().String(), "10.244.0.11", "10.244.1.12")
	})
}

// clusterSnapshot runs `kubectl svcproxy snapshot --output-file file` as the svcproxy
// user (kubeconfig) until the snapshot satisfies synced: the plugin lists
// from the API server's watch cache, which may lag behind kubectl's
// writes. It returns file.
func clusterSnapshot(t *testing.T, kubectl, bin, kubeconfig, file string, synced func(snap string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(t.Context(), cmdTimeout)
		cmd := exec.CommandContext(ctx, kubectl, "svcproxy", "snapshot", "--node-name=node1", "--output-file", file)
		// Plugin discovery: kubectl finds kubectl-svcproxy on PATH.
		cmd.Env = append(os.Environ(),
			"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+kubeconfig)
		r := runCmd(cmd)
		cancel()
		if r.code != 0 {
			t.Fatalf("snapshot:\n%s", r)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if synced(string(data)) {
			return file
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never reflected the cluster:\n%s", data)
		}
	}
}
