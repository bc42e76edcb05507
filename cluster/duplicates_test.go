package cluster

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDecodeDuplicateItemsIsAnError checks that a List whose "items" is
// given twice is refused, in JSON as in YAML: the JSON decoder once kept
// the later list and dropped the earlier's objects without a word
// (issue 33).
func TestDecodeDuplicateItemsIsAnError(t *testing.T) {
	svc := func(name string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"clusterIP":"10.96.0.1","ports":[{"port":80}]}}`
	}
	for name, in := range map[string]string{
		"list.json":        `{"apiVersion":"v1","kind":"List","items":[` + svc("a") + `],"items":[` + svc("b") + `]}`,
		"typed.json":       `{"apiVersion":"v1","kind":"ServiceList","items":[` + svc("a") + `],"metadata":{},"items":[` + svc("b") + `]}`,
		"nested.json":      `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[],"items":[` + svc("b") + `]}]}`,
		"stream.json":      svc("x") + "\n" + `{"apiVersion":"v1","kind":"List","items":[` + svc("a") + `],"items":[]}`,
		"list.yaml":        "apiVersion: v1\nkind: List\nitems:\n- " + svc("a") + "\nitems:\n- " + svc("b") + "\n",
		"empty-first.json": `{"apiVersion":"v1","kind":"List","items":null,"items":[` + svc("b") + `]}`,
	} {
		_, err := Decode(name, []byte(in))
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		want := `duplicate field "items"`
		if strings.HasSuffix(name, ".yaml") {
			want = `key "items" already set in map` // YAML's own words, with the line
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

// TestDuplicateFieldWarningSaysWhichValue checks that the warning about a
// field given twice says what the object holds: the later value for a
// string, number or list; both, the later over the earlier, for an
// object. It once said "ignored" of the value that was used. In YAML a
// key given twice is an error, as in kubectl, whatever its value.
func TestDuplicateFieldWarningSaysWhichValue(t *testing.T) {
	in := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"ns","labels":{"app":"x","app":"y"}},` +
		`"spec":{"type":"NodePort","clusterIP":"10.96.0.1","ports":[{"port":80,"port":81,"targetPort":8080,"targetPort":"http"}]},` +
		`"spec":{"clusterIP":"10.96.0.2","clusterIP":"10.96.0.3","ports":[{"port":90}],"ports":[{"port":91}]}}`
	s, err := Decode("svc.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.String())
	}
	for _, want := range []string{
		`svc.json: Service ns/a: duplicate field "metadata.labels.app": the later value is used`,
		`svc.json: Service ns/a: duplicate field "spec.ports[0].port": the later value is used`,
		`svc.json: Service ns/a: duplicate field "spec.ports[0].targetPort": the later value is used`,
		`svc.json: Service ns/a: duplicate field "spec": both are read, the later over the earlier: a member in both takes the later value, and a member only in the earlier is kept`,
		`svc.json: Service ns/a: duplicate field "spec.clusterIP": the later value is used`,
		`svc.json: Service ns/a: duplicate field "spec.ports": the later value is used`,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no warning %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if strings.Contains(strings.Join(got, "\n"), "ignored") {
		t.Errorf("a warning says a value that is read is ignored:\n%s", strings.Join(got, "\n"))
	}
	// What the warnings say is what the Service holds.
	svc := s.Services[0]
	if svc.Labels["app"] != "y" || svc.Spec.ClusterIP != "10.96.0.3" || svc.Spec.Type != corev1.ServiceTypeNodePort ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 91 {
		t.Errorf("labels %v, clusterIP %s, type %s, ports %v", svc.Labels, svc.Spec.ClusterIP, svc.Spec.Type, svc.Spec.Ports)
	}
	// An unknown field is still ignored, and said so.
	s, err = Decode("svc.json", []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"ns"},"spec":{"clusterIP":"10.96.0.1","colour":"red"}}`))
	if err != nil || len(s.Warnings) != 1 || s.Warnings[0].Message != `unknown field "spec.colour": ignored` {
		t.Errorf("unknown field: %v %v", err, s.Warnings)
	}
	// YAML: an error naming the key and its line.
	_, err = Decode("svc.yaml", []byte("apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: ns}\nspec:\n  clusterIP: 10.96.0.1\n  clusterIP: 10.96.0.2\n"))
	if err == nil || !strings.Contains(err.Error(), `line 6: key "clusterIP" already set in map`) {
		t.Errorf("YAML: %v", err)
	}
}

// TestListDuplicateHeaderWarns checks a List's other members given twice:
// the later kind is read, the List's metadata not at all, and the
// warnings say so.
func TestListDuplicateHeaderWarns(t *testing.T) {
	s, err := Decode("l.json", []byte(`{"apiVersion":"v1","kind":"Thing","kind":"List","metadata":{},"metadata":{"resourceVersion":"1"},"items":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		`l.json: List: duplicate field "kind": the later value is used`,
		`l.json: List: duplicate field "metadata": ignored, as is the List's metadata`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

// TestListWithManyDuplicateKeys: a List that repeats thousands of keys
// costs one pass over them (it was quadratic: 80k keys took 20 s) and
// gets a bounded number of warnings.
func TestListWithManyDuplicateKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"List","items":[]`)
	for i := range 40000 {
		k := "k" + strconv.Itoa(i)
		b.WriteString(`,"` + k + `":1,"` + k + `":2`)
	}
	b.WriteString("}")
	s, err := Decode("l.json", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Warnings); n != maxDuplicateWarnings+1 {
		t.Fatalf("%d warnings, want %d and a count of the rest", n, maxDuplicateWarnings+1)
	}
	if last := s.Warnings[len(s.Warnings)-1].String(); !strings.Contains(last, "39990 more duplicate fields") {
		t.Errorf("last warning %q does not count the rest", last)
	}
}
