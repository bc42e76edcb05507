package kubeletlab

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Import imports an OCI image archive into every node's containerd, as
// `ctr -n k8s.io images import` does by hand, all nodes at once, and
// returns the names of the images it added to the first node.
func (l *Lab) Import(t testing.TB, archive string) []string {
	t.Helper()
	added := make([][]string, len(l.nodes))
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		wg.Go(func() { added[i], errs[i] = l.importInto(n, archive) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("kubeletlab: import %s: %v", archive, err)
	}
	t.Logf("kubeletlab: imported %s: %v", filepath.Base(archive), added[0])
	return added[0]
}

// importInto imports archive into node n's containerd and returns the
// names of the images it added.
func (l *Lab) importInto(n *node, archive string) ([]string, error) {
	before, err := l.ctr(n, "images", "list", "--quiet")
	if err != nil {
		return nil, err
	}
	if _, err := l.ctr(n, "images", "import", archive); err != nil {
		return nil, err
	}
	after, err := l.ctr(n, "images", "list", "--quiet")
	if err != nil {
		return nil, err
	}
	var added []string
	for _, name := range strings.Fields(after) {
		if !slices.Contains(strings.Fields(before), name) && !strings.HasPrefix(name, "sha256:") {
			added = append(added, name)
		}
	}
	return added, nil
}
