package cluster

import (
	"bytes"
	"slices"
	"testing"
)

// TestSplitYAMLKeepsTheFile: documents are cut out of the file as it is
// (the file is never written to), whatever follows "---" on its line and
// however lines end, and a "..." line inside a document is left out.
func TestSplitYAMLKeepsTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // the documents' names, in order
	}{
		{"content after ---", "--- {apiVersion: v1, kind: Node, metadata: {name: a}}\n--- {apiVersion: v1, kind: Node, metadata: {name: b}}\n", []string{"a", "b"}},
		{"trailing spaces", "--- {apiVersion: v1, kind: Node, metadata: {name: a}}   \n---   \napiVersion: v1\nkind: Node\nmetadata: {name: b}\n", []string{"a", "b"}},
		{"CRLF", "--- {apiVersion: v1, kind: Node, metadata: {name: a}}\r\n---\r\napiVersion: v1\r\nkind: Node\r\nmetadata: {name: b}\r\n", []string{"a", "b"}},
		{"end marker inside", "apiVersion: v1\nkind: Node\n...\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n", []string{"a", "b"}},
		{"comment after ---", "--- # first\napiVersion: v1\nkind: Node\nmetadata: {name: a}\n", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			s, err := Decode("split.yaml", in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range s.Nodes {
				got = append(got, n.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("nodes %v, want %v", got, tc.want)
			}
			if !bytes.Equal(in, []byte(tc.in)) {
				t.Errorf("the input was written to: %q", in)
			}
		})
	}
}

// TestJSONStreamWithAListAfterAnObject checks that a List that is not
// the first value of a JSON stream decodes: the members the split found
// were placed in the file, not in the List, and checking the List's JSON
// cut it at the wrong place and panicked (found with issue 33).
func TestJSONStreamWithAListAfterAnObject(t *testing.T) {
	svc := func(name, ip string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"ns"},"spec":{"clusterIP":"` + ip + `","ports":[{"port":80}]}}`
	}
	for _, in := range []string{
		svc("x", "10.96.0.1") + "\n" + `{"apiVersion":"v1","kind":"List","items":[` + svc("a", "10.96.0.2") + `]}`,
		"  \n" + `{"apiVersion":"v1","kind":"List","items":[` + svc("a", "10.96.0.2") + `]}` + "\n" + svc("x", "10.96.0.1"),
	} {
		s, err := Decode("stream.json", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Services) != 2 {
			t.Errorf("%d Services, want 2", len(s.Services))
		}
	}
}
