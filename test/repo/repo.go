// Package repo finds the repository a test runs in: test packages reach
// its scripts (hack/), manifests (deploy/), docs and testdata from there.
package repo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Root is the module's root: the first directory above the working
// directory (a package directory under go test) that holds go.mod beside
// cmd/kubectl-svcproxy. hack/tools has a go.mod of its own, and is not it.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "go.mod")) && isFile(filepath.Join(dir, "cmd", "kubectl-svcproxy", "main.go")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod beside cmd/kubectl-svcproxy) not found above the working directory")
		}
		dir = parent
	}
}

// MustRoot is Root for a test, which it fails if there is none.
func MustRoot(t testing.TB) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
