package cluster

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode: whatever decodes builds and writes without panicking, and a
// lazy reading of a JSON file decodes only valid JSON, as a careful one.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		kubectlList,
		buildFixture,
		"",
		"---\n---\n",
		`{"apiVersion": "v1", "kind": "List", "items": [{"kind": "NodeList", "apiVersion": "v1", "items": [{}]}]}`,
		"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: x}]}\n",
		"a: &a [*a, *a]\n",
		"--- {apiVersion: v1, kind: Node, metadata: {name: n}}\n",
		"{\"a\": 1}{",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":tru}}]}`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}} {"apiVersion":"v1","kind":"Node","metadata":{"name":"m"}}]}`,
		"{\"apiVersion\":\"v1\",\"kind\":\"ServiceList\",\"metadata\":{\"x\":[1,]},\"items\":[{\"metadata\":{\"name\":\"a\tb\"}}]}",
		`{"apiVersion":"v1","kind":"List","items":[]} {"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"addressType":"IPv4","endpoints":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLazyReading(t, data)
		s, err := Decode("fuzz.yaml", data)
		if err != nil {
			return
		}
		// Whatever decodes must build and write without panicking.
		_, _, _ = Build(s, Config{NodeName: "node-1"})
		var buf bytes.Buffer
		if err := s.WriteYAML(&buf); err != nil {
			t.Fatalf("WriteYAML: %v", err)
		}
	})
}

// checkLazyReading: what a lazy reading of data decodes, data holds as
// valid JSON documents, and a careful reading decodes the same.
func checkLazyReading(t *testing.T, data []byte) {
	text, err := utf8Text(data)
	if err != nil {
		return
	}
	docs, ok := splitJSONLazy(text)
	if !ok {
		return
	}
	lazy, err := decodeDocuments("fuzz.json", docs, reading{lazy: true})
	if err != nil {
		return
	}
	for _, d := range docs {
		if !json.Valid(d.data) {
			t.Fatalf("%q: a lazy reading decoded %q, which is not JSON", data, d.data)
		}
	}
	careful, err := decodeDocuments("fuzz.json", splitDocuments(text), reading{})
	if err != nil {
		t.Fatalf("%q: a lazy reading decoded it, a careful one says %v", data, err)
	}
	if diff := cmp.Diff(careful, lazy); diff != "" {
		t.Fatalf("%q: the readings differ (-careful +lazy):\n%s", data, diff)
	}
}
