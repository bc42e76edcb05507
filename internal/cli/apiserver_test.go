package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/deploykit"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testcluster"
)

// apiserverObjects is what the tests render: a Node, and a Service with an
// EndpointSlice written by hand (there is no controller manager).
const apiserverObjects = `
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
  clusterIP: 10.96.0.50
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  namespace: default
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
endpoints:
- addresses: [10.244.1.5]
  conditions: {ready: true}
  nodeName: node1
ports:
- {name: http, port: 8080, protocol: TCP}
`

// TestAPIServer runs the plugin against a real kube-apiserver with RBAC, as
// the least-privileged user docs/DEPLOY.md documents.
func TestAPIServer(t *testing.T) {
	// -short opts out of a slow test: not a missing prerequisite, so
	// a plain skip, also under CI.
	if testing.Short() {
		t.Skip("starts a real kube-apiserver and etcd")
	}
	c := testcluster.Start(t)
	c.Apply(t, apiserverObjects)
	user := "--kubeconfig=" + c.UserKubeconfig

	// Before the binding, the first request is refused: the error names it.
	expectError(t, []string{"render", user, "--node-name=node1"},
		`cannot get resource "nodes"`, `"svcproxy"`)
	c.Apply(t, string(testcluster.ShippedRBAC(t)))
	// The shipped RBAC binds only the ServiceAccount: the user is still
	// refused until the test binds the same ClusterRole to it.
	expectError(t, []string{"render", user, "--node-name=node1"},
		`cannot get resource "nodes"`, `"svcproxy"`)
	c.Apply(t, testcluster.TestRBAC)

	t.Run("render", func(t *testing.T) {
		want := renderWhenSynced(t, user, "-d 10.96.0.50/32")
		// default/kubernetes, made by kube-apiserver, has no endpoints here.
		for _, rule := range []string{"-d 10.96.0.50/32", "default/kubernetes:https has no endpoints", "default/web:http cluster IP", "--to-destination 10.244.1.5:8080"} {
			if !strings.Contains(want, rule) {
				t.Errorf("render lacks %q:\n%s", rule, want)
			}
		}
		snap := filepath.Join(t.TempDir(), "snap.yaml")
		if _, stderr, code := run(t, "", "snapshot", user, "--node-name=node1", "--output-file", snap); code != 0 {
			t.Fatalf("snapshot: exit %d: %s", code, stderr)
		}
		got, stderr, code := run(t, "", "render", "-f", snap, "--node-name=node1")
		if code != 0 {
			t.Fatalf("render -f: exit %d: %s", code, stderr)
		}
		if got != want {
			t.Errorf("render of the snapshot differs from the render from the API server:\n%s\n---\n%s", got, want)
		}
	})
	t.Run("missing permission", func(t *testing.T) {
		// The other user may get its Node (once RBAC has seen the binding)
		// but not list Services.
		args := []string{"render", "--kubeconfig=" + c.OtherKubeconfig, "--node-name=node1"}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, stderr, _ := run(t, "", args...); !strings.Contains(stderr, `"nodes"`) {
				break
			}
		}
		expectError(t, args, `cannot list resource "services"`, `"other"`)
	})
	t.Run("invalid token", func(t *testing.T) {
		bad := c.WriteKubeconfig(t, "intruder", "not-a-token")
		expectError(t, []string{"render", "--kubeconfig=" + bad, "--node-name=node1"}, "Unauthorized")
	})
	t.Run("deploy manifests", func(t *testing.T) {
		// The API server's own validation of what deploy/ ships, as
		// `kubectl apply` would send it (the kubelet end-to-end test runs
		// the DaemonSet for real).
		kubectl := deploykit.Kubectl(t)
		for _, mode := range deploykit.Modes {
			manifest := deploykit.Render(t, kubectl, deploykit.Dir(t, "overlays/"+mode))
			c.Kubectl(t, manifest, "apply", "--dry-run=server", "-f", "-")
		}
		c.Kubectl(t, deploykit.Render(t, kubectl, deploykit.Dir(t, "cronjob")), "apply", "--dry-run=server", "-f", "-")
	})
	t.Run("unknown node", func(t *testing.T) {
		expectError(t, []string{"render", user, "--node-name=nope"}, `node "nope" not found`)
	})
}

// renderWhenSynced renders as the user until the output contains want: the
// plugin lists from the API server's watch cache (resourceVersion "0"),
// which may lag a moment behind objects just written.
func renderWhenSynced(t *testing.T, kubeconfig, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, stderr, code := run(t, "", "render", kubeconfig, "--node-name=node1")
		if code == 0 && strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("render never contained %q: exit %d: %s\n%s", want, code, stderr, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// expectError runs the CLI and checks that it exits 2 with a message that
// contains every one of wants.
func expectError(t *testing.T, args []string, wants ...string) {
	t.Helper()
	out, stderr, code := run(t, "", args...)
	if code != ExitError {
		t.Fatalf("%s: exit %d, want %d; stdout:\n%s", strings.Join(args, " "), code, ExitError, out)
	}
	for _, want := range wants {
		if !strings.Contains(stderr, want) {
			t.Errorf("%s: error does not name %q: %s", strings.Join(args, " "), want, stderr)
		}
	}
}
