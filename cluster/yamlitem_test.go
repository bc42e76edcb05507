package cluster_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestRealisticYAMLDecodesAsJSON: realistic objects as kubectl prints them
// (last-applied-configuration, managedFields, status, owner references)
// decode to the same snapshot and warnings from JSON, from YAML on the
// block path, from YAML whose items the block path partly refuses (each
// of those alone to the slower tiers), and from what sigs.k8s.io/yaml
// makes of that YAML. The block path converts all but the document with
// aliases, which goes the whole way round as before.
func TestRealisticYAMLDecodesAsJSON(t *testing.T) {
	s := synthetic.Realistic(100)
	var y, j bytes.Buffer
	if err := synthetic.WriteKubectlYAML(&y, s); err != nil {
		t.Fatal(err)
	}
	if err := synthetic.WriteKubectlJSON(&j, s); err != nil {
		t.Fatal(err)
	}
	want := decodeString(t, j.String())
	docs := map[string]string{
		"as kubectl prints it": y.String(),
		"items with comments, tags and folded scalars": perturbItems(y.String(), func(i int, line string) string {
			switch {
			case i%5 == 0 && strings.HasPrefix(line, "  kind: "):
				return line + " # seen"
			case i%7 == 0 && line == "  apiVersion: v1":
				return "  apiVersion: !!str v1"
			case i%11 == 0 && strings.HasPrefix(line, "    name: "):
				return "    name: >-\n      " + strings.TrimPrefix(line, "    name: ")
			}
			return line
		}),
		"an item with an anchor and an alias": perturbItems(y.String(), func(i int, line string) string {
			if i == 50 && strings.HasPrefix(line, "    name: ") {
				return "    name: &n " + strings.TrimPrefix(line, "    name: ") + "\n    generateName: *n"
			}
			return line
		}),
	}
	for name, doc := range docs {
		_, blockErr := cluster.BlockYAMLToJSON([]byte(doc))
		if wantBlock := !strings.Contains(name, "alias"); (blockErr == nil) != wantBlock {
			t.Errorf("%s: the block path converts it: %v, want %v (%v)", name, blockErr == nil, wantBlock, blockErr)
		}
		sigs, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("%s: sigs.k8s.io/yaml: %v", name, err)
		}
		for way, in := range map[string]string{"decoded": doc, "through sigs.k8s.io/yaml": string(sigs)} {
			got := decodeString(t, in)
			if strings.Contains(name, "alias") {
				// generateName is all the alias changed.
				for i := range got.Services {
					got.Services[i].GenerateName = ""
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: decodes unlike the JSON", name, way)
			}
		}
	}
}

// perturbItems rewrites each line of the List doc's items with edit,
// which also learns the item's index.
func perturbItems(doc string, edit func(i int, line string) string) string {
	var b strings.Builder
	i := -1
	for line := range strings.Lines(doc) {
		line = strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(line, "- ") {
			i++
		}
		if i >= 0 {
			line = edit(i, line)
		}
		fmt.Fprintln(&b, line)
	}
	return b.String()
}
