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
