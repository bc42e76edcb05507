package kubeletlab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/repo"
)

// GoBuild builds pkg (an import path) statically into dir and returns the
// binary's path.
func GoBuild(t testing.TB, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = repo.MustRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubeletlab: go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// NodeGet GETs url from inside the first node's network namespace and
// returns the body.
func (l *Lab) NodeGet(ctx context.Context, url string) (string, error) {
	return l.NodeGetOn(ctx, 0, url)
}

// NodeGetOn is NodeGet from inside node i's network namespace.
func (l *Lab) NodeGetOn(ctx context.Context, i int, url string) (string, error) {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{DialContext: l.nodes[i].ns.Dial, DisableKeepAlives: true},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}
