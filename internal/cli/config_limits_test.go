package cli

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// withConfigLimit lowers the --config size limit for one test.
func withConfigLimit(t *testing.T, limit int64) {
	t.Helper()
	old := maxConfigSize
	maxConfigSize = limit
	t.Cleanup(func() { maxConfigSize = old })
}

// A --config file over its limit, or a device read past it, is an error
// that names the file and the limit; one at the limit is read.
func TestConfigSizeLimit(t *testing.T) {
	path := writeConfig(t, "mode: iptables\n")
	head := "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
	size := int64(len(head + "mode: iptables\n"))
	withConfigLimit(t, size)
	if _, stderr, code := run(t, "", "render", "--example", "--config", path); code != ExitOK {
		t.Fatalf("at the limit: exit %d, %s", code, stderr)
	}
	withConfigLimit(t, size-1)
	want := fmt.Sprintf("--config %s: larger than %d bytes, the limit for a --config file", path, size-1)
	if _, stderr, code := run(t, "", "render", "--example", "--config", path); code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("over the limit: exit %d, %q; want exit 2 and %q", code, stderr, want)
	}
	withConfigLimit(t, 1<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, stderr, code := run(t, "", "render", "--example", "--config", "/dev/zero")
	runtime.ReadMemStats(&after)
	if want := "--config /dev/zero: larger than 1 MiB, the limit for a --config file"; code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("/dev/zero: exit %d, %q; want exit 2 and %q", code, stderr, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("render --config /dev/zero allocated %d MiB", n>>20)
	}
}

// A --config file whose aliases expand it far past its size (a 1 MB
// string aliased 3000 times in a field kube-proxy knows) is refused
// before anything expands it.
func TestConfigAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("clusterCIDR: &a " + strings.Repeat("x", 1<<20) + "\nnodePortAddresses:\n")
	for range 3000 {
		b.WriteString("- *a\n")
	}
	path := writeConfig(t, b.String())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, stderr, code := run(t, "", "render", "--example", "--config", path)
	runtime.ReadMemStats(&after)
	want := "--config " + path + ": YAML aliases expand the document"
	if code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, %.300q; want exit 2 and %q", code, stderr, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("render --config with an alias bomb allocated %d MiB", n>>20)
	}
}
