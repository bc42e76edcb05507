package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
		// What kubectl prints for an object made by kubectl apply.
		"apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n" +
			"      {\"apiVersion\":\"v1\",\"kind\":\"Service\"}\n  managedFields:\n  - fieldsType: FieldsV1\n    fieldsV1:\n" +
			"      f:spec:\n        f:ports:\n          k:{\"port\":80,\"protocol\":\"TCP\"}:\n            .: {}\n" +
			"  name: s\n  uid: 0b63cb0f-0001-40bf-8000-0000000000bf\nspec:\n  ports:\n  - port: 80\n",
		"{\"a\": 1}{",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":tru}}]}`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}} {"apiVersion":"v1","kind":"Node","metadata":{"name":"m"}}]}`,
		"{\"apiVersion\":\"v1\",\"kind\":\"ServiceList\",\"metadata\":{\"x\":[1,]},\"items\":[{\"metadata\":{\"name\":\"a\tb\"}}]}",
		`{"apiVersion":"v1","kind":"List","items":[]} {"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"addressType":"IPv4","endpoints":[]}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"\u0080"}}`,
		`{"apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}],"kind":"List","items":null}`,
		`{"apiVersion":"v1","items":7,"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}]}`,
		`{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}},],"apiVersion":"v1"}`,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range onePassCases {
		f.Add([]byte(seed))
	}
	// Alias bombs that go-yaml's own alias ratio lets through: nested
	// (111 MB of JSON from 13 KB), and one large string aliased often
	// (64 MB from 64 KB).
	f.Add(nestedAliasBomb(1000, 5, 10))
	f.Add(aliasBomb(64<<10, 1000))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLazyReading(t, data)
		checkOnePass(t, data)
		s, err := checkBoundedDecode(t, data)
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

// checkBoundedDecode decodes data, and fails unless decoding allocated
// within a bound relative to data's size: what its aliases may expand it
// to, converted, decoded and defaulted. Decoding a YAML snapshot
// allocates about 8 times the file; the slow path for YAML more.
func checkBoundedDecode(t *testing.T, data []byte) (*Snapshot, error) {
	var s *Snapshot
	var err error
	n := allocated(func() { s, err = Decode("fuzz.yaml", data) })
	if bound := 64<<20 + 64*uint64(len(data)); n > bound {
		t.Fatalf("%.200q: decoding %d bytes allocated %d MiB, over %d MiB (error: %v)", data, len(data), n>>20, bound>>20, err)
	}
	return s, err
}

// nestedAliasBomb is a ConfigMap with a string of size bytes and levels
// of lists that alias the level below fanOut times. go-yaml refuses a
// document once nearly every node it has decoded came from an alias
// ("excessive aliasing"): plain nodes first, a 25th of the expanded
// leaves (each alias and its node count), pass that.
func nestedAliasBomb(size, levels, fanOut int) []byte {
	expanded := 1
	for range levels {
		expanded *= fanOut
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n")
	b.WriteString("  pad: [" + strings.TrimSuffix(strings.Repeat("x, ", expanded/25), ", ") + "]\n")
	b.WriteString("  l0: &l0 " + strings.Repeat("x", size) + "\n")
	for l := 1; l <= levels; l++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", l-1), fanOut), ", "))
	}
	return []byte(b.String())
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

// checkOnePass: objects examined in one pass where they can be
// (examineTyped) decode to the snapshot, warnings and error that examining
// every object the long way gives, in a careful reading and in a lazy one.
func checkOnePass(t *testing.T, data []byte) {
	text, err := utf8Text(data)
	if err != nil {
		return
	}
	sameBothWays(t, data, splitDocuments(text), reading{})
	if docs, ok := splitJSONLazy(text); ok {
		sameBothWays(t, data, docs, reading{lazy: true})
	}
}

func sameBothWays(t *testing.T, data []byte, docs []document, r reading) {
	onePass, errOne := decodeDocuments("fuzz.yaml", docs, r)
	r.longWay = true
	longWay, errLong := decodeDocuments("fuzz.yaml", docs, r)
	if fmt.Sprint(errOne) != fmt.Sprint(errLong) {
		t.Fatalf("%q (lazy %v): errors differ: one pass %v, the long way %v", data, r.lazy, errOne, errLong)
	}
	if diff := cmp.Diff(longWay, onePass); diff != "" {
		t.Fatalf("%q (lazy %v): the snapshots differ (-long way +one pass):\n%s", data, r.lazy, diff)
	}
}

// onePassCases are objects at the edge of examineTyped: where it must
// decline, and where it may decode.
var onePassCases = []string{
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"n"},"spec":{"ports":[{"port":80}]}}`,
	`{"kind":"Service","apiVersion":"v1","metadata":{"name":"a"}}`,
	`{"apiVersion":"v1","kind":"Service","kind":"Node","metadata":{"name":"a"}}`,
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"kind":"Service"}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","name":"b"}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spek":{}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":null}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":null}}`,
	`{"apiVersion":"v1","kind":"Serv\u0069ce","metadata":{"name":"\u0061"}}`,
	`{"apiVersion":"v1","kind":5,"metadata":{"name":"a"}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"\ud800"}}`,
	`{"apiVersion":"v1beta1","kind":"Service","metadata":{"name":"a"}}`,
	`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s","namespace":"n","labels":{"kubernetes.io/service-name":"a"}},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}],"ports":[{"port":80}]}`,
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.9"}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"kubernetes"},"spec":{"cidrs":["10.96.0.0/12"]}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"},"spec":{"ports":[{"port":"80"}]}}`,
	`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"a"}},{"kind":"Service","metadata":{"name":"b"}}]}`,
	`{"apiVersion":"v1","kind":"ServiceList","items":[{"metadata":{"name":"a"}}]}`,
	// Sorted members, as kubectl writes an EndpointSlice: addressType first.
	sortedSlice,
	`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1beta1","kind":"EndpointSlice","metadata":{"name":"s"}}`,
	`{"addressType":"IPv4","apiVersion":"v1","kind":"Service","metadata":{"name":"a"}}`,
	`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","metadata":{"name":"s"}}`,
	`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","kind":"EndpointSlice","metadata":{"name":"s"}}`,
	`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","kind":"EndpointSl\u0069ce","metadata":{"name":"s"},"ports":[{"port":"80"}]}`,
	`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"spec":{}}`,
}

// sortedSlice is an EndpointSlice with its members sorted by name.
const sortedSlice = `{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","endpoints":[{"addresses":["10.0.0.1"],"targetRef":{"kind":"Pod","name":"p"}}],"kind":"EndpointSlice","metadata":{"name":"s","namespace":"n","labels":{"kubernetes.io/service-name":"a"}},"ports":[{"port":80}]}`

func TestOnePassMatchesLongWay(t *testing.T) {
	for _, c := range onePassCases {
		checkOnePass(t, []byte(c))
		checkOnePass(t, []byte("apiVersion: v1\nkind: List\nitems:\n- "+c+"\n"))
		checkOnePass(t, []byte(`{"apiVersion":"v1","kind":"List","items":[`+c+`]}`))
	}
	checkOnePass(t, []byte(kubectlList))
	checkOnePass(t, []byte(buildFixture))
}

// TestExamineTypedSortedEndpointSlice: an EndpointSlice written with its
// members sorted (addressType first) is decoded in one pass; objects that
// only start like one are left to the long way.
func TestExamineTypedSortedEndpointSlice(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    bool
		refused string
	}{
		{sortedSlice, true, ""},
		{`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1beta1","kind":"EndpointSlice","metadata":{"name":"s"}}`, false, ""},
		{`{"addressType":"IPv4","apiVersion":"v1","kind":"Service","metadata":{"name":"a"}}`, false, ""},
		{`{"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s"},"spec":{}}`, false, "EndpointSlice"},
		{`{"metadata":{"name":"s"},"addressType":"IPv4","apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice"}`, false, ""},
	} {
		it, ok, refused := examineTyped(location{file: "f"}, []byte(tc.raw), true)
		if ok != tc.want || refused != tc.refused {
			t.Errorf("%s: ok %v, refused %q; want %v, %q", tc.raw, ok, refused, tc.want, tc.refused)
		}
		if ok && (it.obj == nil || it.h.name != "s" || it.h.kind != "EndpointSlice") {
			t.Errorf("%s: decoded %+v", tc.raw, it)
		}
	}
}
