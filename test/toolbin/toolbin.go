// Package toolbin gives every test that runs the real kubectl-svcproxy
// binary the same one: hack/test.sh builds bin/kubectl-svcproxy once, as
// the release and the image build it, and names it in $SVCPROXY_BINARY;
// without that variable the binary is built once per test process, the
// same way. The binary is static (cgo off), so the IPVS VM's guest runs
// it too.
package toolbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// Env names a prebuilt binary to test instead of building
// ./cmd/kubectl-svcproxy (hack/test.sh's build, or a release binary).
const Env = "SVCPROXY_BINARY"

var built struct {
	once sync.Once
	bin  string
	err  error
}

// Path returns the absolute path of the binary under test.
func Path(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(Env); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	built.once.Do(func() { built.bin, built.err = build() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// build builds the binary into the repository's git-ignored _cache, under
// a temporary name renamed into place, so that test processes running at
// once each get a whole binary of the same source.
func build() (string, error) {
	root, err := repo.Root()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "_cache", "toolbin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl-svcproxy")
	tmp := fmt.Sprintf("%s.tmp.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, "./cmd/kubectl-svcproxy")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build ./cmd/kubectl-svcproxy: %w\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
}
