package cluster_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestFastYAMLToJSONTakesKubectlOutput: what kubectl and WriteYAML print
// stays on the fast path, last-applied-configuration, managedFields and
// UIDs included; without this the path could silently never run.
func TestFastYAMLToJSONTakesKubectlOutput(t *testing.T) {
	var buf, real bytes.Buffer
	if err := synthetic.Snapshot(20).WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if err := synthetic.WriteKubectlYAML(&real, synthetic.Realistic(20)); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{cluster.KubectlList, buf.String(), real.String()} {
		if _, err := cluster.FastYAMLToJSON([]byte(doc)); err != nil {
			t.Errorf("%.200q...: %v", doc, err)
		}
		if _, err := cluster.BlockYAMLToJSON([]byte(doc)); err != nil && doc != cluster.KubectlList {
			t.Errorf("block path: %.200q...: %v", doc, err)
		}
	}
}

// TestDecodeYAMLEqualsJSON: a snapshot reads the same from YAML as from
// JSON, in one document or several, with anchors and aliases. Its List
// is long enough for the block path to convert and cut its items in
// parallel.
func TestDecodeYAMLEqualsJSON(t *testing.T) {
	snap := synthetic.Snapshot(40)
	var y, j bytes.Buffer
	if err := snap.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	if err := snap.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	fromJSON := decodeString(t, j.String())
	multi := "apiVersion: v1\nkind: List\nitems: []\n---\n" + y.String() + "---\n# nothing\n"
	for name, doc := range map[string]string{"one document": y.String(), "several": multi} {
		got := decodeString(t, doc)
		got.Warnings, fromJSON.Warnings = nil, nil
		if !reflect.DeepEqual(got, fromJSON) {
			t.Errorf("%s: YAML and JSON decode differently", name)
		}
	}
	anchored := decodeString(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s, labels: &l {app: web}, annotations: &p {protocol: UDP}}\n"+
		"spec:\n  selector: *l\n  ports: [{name: a, port: 80}, {<<: *p, name: b, port: 53}]\n")
	plain := decodeString(t, `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": {"app": "web"}, "annotations": {"protocol": "UDP"}},`+
		`"spec": {"selector": {"app": "web"}, "ports": [{"name": "a", "port": 80}, {"protocol": "UDP", "name": "b", "port": 53}]}}`)
	if !reflect.DeepEqual(anchored.Services, plain.Services) {
		t.Errorf("anchors, aliases and merge keys: got %+v, want %+v", anchored.Services, plain.Services)
	}
	dup := "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  name: b\n"
	_, err := cluster.Decode("dup.yaml", []byte(dup))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`"name" already set`)) && !bytes.Contains([]byte(err.Error()), []byte("already defined")) {
		t.Errorf("duplicate key: got %v, want the YAML library's duplicate-key error", err)
	}
}

func decodeString(t *testing.T, in string) *cluster.Snapshot {
	t.Helper()
	s, err := cluster.Decode("snapshot.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return s
}
