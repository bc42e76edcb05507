package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadFileCountingCounts: every object examined is counted once, in a
// List (examined on every CPU) and as a document of its own, in YAML and
// in JSON.
func TestLoadFileCountingCounts(t *testing.T) {
	var y strings.Builder
	y.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	var items []string
	for i := range 3 {
		fmt.Fprintf(&y, "- apiVersion: v1\n  kind: Service\n  metadata: {name: s%d, namespace: default}\n  spec: {clusterIP: 10.96.0.%d, ports: [{port: 80}]}\n", i, i+10)
		items = append(items, fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s%d","namespace":"default"},"spec":{"clusterIP":"10.96.0.%d","ports":[{"port":80}]}}`, i, i+10))
	}
	y.WriteString("---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
	list := `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`
	for _, c := range []struct {
		name, data string
		want       int64
	}{
		{"snap.yaml", y.String(), 4},
		{"snap.json", list, 3},
	} {
		path := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		if _, err := LoadFileCounting(path, nil, &n); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if n.Load() != c.want {
			t.Errorf("%s: counted %d objects, want %d", c.name, n.Load(), c.want)
		}
	}
}
