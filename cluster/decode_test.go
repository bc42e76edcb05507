package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kubectlList is what `kubectl get nodes,servicecidrs,services,endpointslices
// -A -o yaml` prints, trimmed, plus a Pod.
const kubectlList = `apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      topology.kubernetes.io/zone: zone-a
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      manager: kubelet
      operation: Update
    name: node-1
    resourceVersion: "812"
    uid: 2a7c6c02-2f54-4a27-8a3e-1f4d2b2e7a11
  spec:
    podCIDR: 10.244.1.0/24
    podCIDRs:
    - 10.244.1.0/24
    - fd00:10:244:1::/64
  status:
    addresses:
    - address: 172.18.0.2
      type: InternalIP
    - address: fc00:f853:ccd:e793::2
      type: InternalIP
    - address: node-1
      type: Hostname
    capacity:
      cpu: "8"
      memory: 16Gi
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    namespace: ns1
- apiVersion: networking.k8s.io/v1
  kind: ServiceCIDR
  metadata:
    name: kubernetes
  spec:
    cidrs:
    - 10.96.0.0/16
    - fd00:10:96::/112
- apiVersion: v1
  kind: Service
  metadata:
    creationTimestamp: "2026-01-02T03:04:05Z"
    name: web
    namespace: ns1
  spec:
    clusterIP: 10.96.0.10
    clusterIPs:
    - 10.96.0.10
    ipFamilies:
    - IPv4
    ports:
    - name: http
      port: 80
      protocol: TCP
      targetPort: 8080
    type: ClusterIP
- addressType: IPv4
  apiVersion: discovery.k8s.io/v1
  endpoints:
  - addresses:
    - 10.244.1.5
    conditions:
      ready: true
    nodeName: node-1
  kind: EndpointSlice
  metadata:
    labels:
      kubernetes.io/service-name: web
    name: web-abc12
    namespace: ns1
  ports:
  - name: http
    port: 8080
    protocol: TCP
kind: List
metadata:
  resourceVersion: ""
`

func mustDecode(t *testing.T, in string) *Snapshot {
	t.Helper()
	s, err := Decode("snapshot.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return s
}

// names lists the snapshot's objects as "Kind namespace/name", in order.
func names(s *Snapshot) []string {
	var out []string
	for _, o := range s.Nodes {
		out = append(out, "Node "+o.Name)
	}
	for _, o := range s.ServiceCIDRs {
		out = append(out, "ServiceCIDR "+o.Name)
	}
	for _, o := range s.Services {
		out = append(out, "Service "+o.Namespace+"/"+o.Name)
	}
	for _, o := range s.EndpointSlices {
		out = append(out, "EndpointSlice "+o.Namespace+"/"+o.Name)
	}
	return out
}

func warningStrings(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []string
		warnings []string
	}{{
		name:     "kubectl List",
		in:       kubectlList,
		want:     []string{"Node node-1", "ServiceCIDR kubernetes", "Service ns1/web", "EndpointSlice ns1/web-abc12"},
		warnings: []string{"snapshot.yaml: item 2 (Pod ns1/web-1): kind Pod is not used by kube-proxy: skipped"},
	}, {
		name: "multi-document with empty and comment-only documents",
		in: `# header comment
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: ns1}
spec: {clusterIP: 10.96.0.2}
---
# only a comment
---
---
apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns1}
spec: {clusterIP: 10.96.0.1}
...
`,
		want: []string{"Service ns1/a", "Service ns1/b"},
	}, {
		name: "JSON List",
		in: `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "default"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2", "namespace": "default"}}
]}`,
		want:     []string{"Node n1"},
		warnings: []string{"snapshot.yaml: 2 objects of kind ConfigMap are not used by kube-proxy: skipped (first: item 2 (ConfigMap default/c1))"},
	}, {
		name: "JSON stream of single objects",
		in: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "namespace": "x"}}
{"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": {"name": "c"}, "spec": {"cidrs": ["10.0.0.0/24"]}}`,
		want: []string{"ServiceCIDR c", "Service x/a"},
		warnings: []string{"snapshot.yaml: document 1 (Service x/a): no spec.clusterIP: the API server would allocate one, " +
			"which a file cannot know: not proxied"},
	}, {
		name: "nested typed lists without item types",
		in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ServiceList
  items:
  - metadata: {name: s1, namespace: ns}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSliceList
  items:
  - metadata: {name: s1-x, namespace: ns}
    addressType: IPv4
`,
		want: []string{"Service ns/s1", "EndpointSlice ns/s1-x"},
		warnings: []string{"snapshot.yaml: item 1.1 (Service ns/s1): no spec.clusterIP: the API server would allocate one, " +
			"which a file cannot know: not proxied"},
	}, {
		name: "unknown field, old apiVersion, missing namespace, duplicate",
		in: `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {clusterIP: 10.0.0.1, bogus: true}
---
apiVersion: discovery.k8s.io/v1beta1
kind: EndpointSlice
metadata: {name: web-1, namespace: default}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {clusterIP: 10.0.0.2}
`,
		want: []string{"Service default/web"},
		warnings: []string{
			`snapshot.yaml: document 1 (Service web): unknown field "spec.bogus": ignored`,
			`snapshot.yaml: document 2 (EndpointSlice default/web-1): apiVersion "discovery.k8s.io/v1beta1" is not supported (want discovery.k8s.io/v1): skipped`,
			`snapshot.yaml: document 3 (Service default/web): duplicate Service default/web: replaces the earlier one`,
		},
	}, {
		name: "YAML in flow style",
		in:   "{apiVersion: v1, kind: Node, metadata: {name: n1}}\n---\n{apiVersion: v1, kind: Node, metadata: {name: n2}}\n",
		want: []string{"Node n1", "Node n2"},
	}, {
		name: "empty file",
		in:   "\n# nothing\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustDecode(t, tt.in)
			if diff := cmp.Diff(tt.want, names(s)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, warningStrings(s.Warnings)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeNormalizes(t *testing.T) {
	s := mustDecode(t, kubectlList)
	n := s.Nodes[0]
	if n.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", n.ManagedFields)
	}
	if n.Kind != "Node" || n.APIVersion != "v1" {
		t.Errorf("type meta = %v", n.TypeMeta)
	}
	if got := s.Services[0].Spec.Ports[0].TargetPort.IntValue(); got != 8080 {
		t.Errorf("targetPort = %d, want 8080: fields must be typed", got)
	}
	if got := s.Services[0].CreationTimestamp.Year(); got != 2026 {
		t.Errorf("creationTimestamp year = %d", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error
	}{{
		name: "type error names file, document, object and field",
		in: `apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns1}
spec:
  ports:
  - port: "80"
`,
		want: []string{"snapshot.yaml: document 3 (Service ns1/web): ", "ServicePort.spec.ports.port of type int32"},
	}, {
		name: "type error in a List item",
		in:   `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": {"podCIDRs": "x"}}]}`,
		want: []string{"snapshot.yaml: item 1 (Node n1): ", "spec.podCIDRs"},
	}, {
		name: "YAML syntax error counts lines from the file start",
		in:   "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: [\n",
		want: []string{"snapshot.yaml: document 2: ", "line 7:"},
	}, {
		name: "JSON syntax error",
		in:   "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n{\"apiVersion\": \"v1\",\n \"kind\": }",
		want: []string{"snapshot.yaml: document 2: line 3, column 10: invalid character '}'"},
	}, {
		name: "no kind",
		in:   "metadata: {name: x}\n",
		want: []string{"snapshot.yaml: object x: object has no kind"},
	}, {
		name: "not an object",
		in:   "- a\n- b\n",
		want: []string{"snapshot.yaml: not a Kubernetes object"},
	}, {
		name: "no name",
		in:   "apiVersion: v1\nkind: Service\nmetadata: {namespace: x}\n",
		want: []string{"snapshot.yaml: Service: metadata.name is required"},
	}, {
		name: "items not a list",
		in:   "apiVersion: v1\nkind: List\nitems: 3\n",
		want: []string{"snapshot.yaml: List: items: not a list"},
	}, {
		name: "duplicate keys",
		in:   "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nkind: Node\n",
		want: []string{"snapshot.yaml: ", `"kind" already set`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("snapshot.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Errorf("error %T is not a *DecodeError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.yaml")
	if err := os.WriteFile(path, []byte(kubectlList), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromStdin, err := LoadFile("-", strings.NewReader(kubectlList))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(fromFile), names(fromStdin)); diff != "" {
		t.Errorf("file and stdin differ:\n%s", diff)
	}
	if got := fromStdin.Warnings[0].Object; !strings.HasPrefix(got, "<stdin>: ") {
		t.Errorf("stdin warning object = %q", got)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: err = %v", err)
	}
}

// A snapshot saved by Windows PowerShell 5 ("kubectl get ... > file") is
// UTF-16 with a byte-order mark; it must read as the same snapshot, never
// as an empty one. Text without a mark must be UTF-8.
func TestDecodeByteOrderMarks(t *testing.T) {
	plain := "apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns}\nspec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}\n---\n" +
		"apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: ns}\nspec: {clusterIP: 10.96.0.2, ports: [{port: 80}]}\n"
	want := names(mustDecode(t, plain))
	utf16 := func(bigEndian bool) []byte {
		var out []byte
		if bigEndian {
			out = []byte{0xFE, 0xFF}
		} else {
			out = []byte{0xFF, 0xFE}
		}
		for _, r := range plain { // ASCII only
			if bigEndian {
				out = append(out, 0, byte(r))
			} else {
				out = append(out, byte(r), 0)
			}
		}
		return out
	}
	for name, data := range map[string][]byte{
		"utf-16le":  utf16(false),
		"utf-16be":  utf16(true),
		"utf-8 bom": append([]byte{0xEF, 0xBB, 0xBF}, plain...),
	} {
		s, err := Decode(name, data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(want, names(s)); diff != "" {
			t.Errorf("%s: objects (-want +got):\n%s", name, diff)
		}
	}
	for name, data := range map[string][]byte{
		"utf-16 without a mark": utf16(false)[2:],
		"latin-1":               []byte("apiVersion: v1\nkind: Service\nmetadata: {name: caf\xe9}\n"),
	} {
		if _, err := Decode(name, data); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}
