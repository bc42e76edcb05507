package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reviewNamesSnapshot: node n1 with pod range POD, Service default/web
// (cluster policy) with one endpoint on node EP.
const reviewNamesSnapshot = `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {podCIDR: POD}
status: {addresses: [{type: InternalIP, address: 192.168.0.1}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {clusterIP: 10.96.0.10, ports: [{name: http, port: 80, protocol: TCP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.5], nodeName: EP, conditions: {ready: true}}
`

// TestNameOutputMatchesPlan: plan --against -o name lists exactly
// the Services whose rules the plan changes, with the plan's exit code.
func TestNameOutputMatchesPlan(t *testing.T) {
	dir := t.TempDir()
	write := func(name, pod, ep string) string {
		p := filepath.Join(dir, name)
		data := strings.NewReplacer("POD", pod, "EP", ep).Replace(reviewNamesSnapshot)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("old.yaml", "10.244.0.0/24", "n2")
	for _, c := range []struct {
		name, file string
		code       int
		out        string
	}{
		// The endpoint moves between two other nodes: no rule changes.
		{"endpoint moves", write("moved.yaml", "10.244.0.0/24", "n3"), 0, ""},
		// The pod range changes: web's KUBE-SVC chain changes.
		{"pod range", write("podcidr.yaml", "10.244.9.0/24", "n2"), ExitChanges, "service/web\n"},
	} {
		out, stderr, code := run(t, "", "plan", "-f", c.file, "--against", old, "--node-name", "n1", "--detect-local-mode=NodeCIDR", "-o", "name")
		if code != c.code || out != c.out {
			t.Errorf("%s: exit %d, %q (%s); want exit %d, %q", c.name, code, out, stderr, c.code, c.out)
		}
	}
}
