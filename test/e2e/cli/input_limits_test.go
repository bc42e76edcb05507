package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// limitRun is one run of the binary against a hostile input, with what it
// cost.
type limitRun struct {
	result
	maxRSS int64 // bytes
}

// runLimited runs the binary with stdin (nil: none) and measures its peak
// memory. GNU time measures it: the rusage of a child that Go starts
// counts the test process's own peak, since the child shares its address
// space (vfork) until exec.
func runLimited(t *testing.T, stdin *os.File, args ...string) limitRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cmdTimeout)
	defer cancel()
	rssFile := filepath.Join(t.TempDir(), "maxrss")
	cmd := exec.CommandContext(ctx, "/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, binary(t)}, args...)...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "no-kubeconfig"))
	r := limitRun{result: runCmd(cmd)}
	r.args = append([]string{binary(t)}, args...)
	out, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatalf("GNU time (package time) wrote no peak memory: %v", err)
	}
	lines := strings.Fields(string(out))
	kib, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		t.Fatalf("GNU time's peak memory %q: %v", out, err)
	}
	r.maxRSS = kib << 10
	return r
}

// expectLimit: the run failed with exit 2 and the message, in good time,
// with at most maxRSS of memory and no Go runtime trace.
func expectLimit(t *testing.T, r limitRun, msg string, maxRSS int64) {
	t.Helper()
	t.Logf("%s: exit %d after %v, %d MiB", strings.Join(r.args[1:], " "), r.code, r.took.Round(time.Millisecond), r.maxRSS>>20)
	if r.code != ExitError || !strings.Contains(r.stderr, msg) {
		t.Errorf("want exit %d and %q:\n%.2000s", ExitError, msg, r)
	}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "runtime.") {
		t.Errorf("a Go runtime trace:\n%.2000s", r.stderr)
	}
	if r.maxRSS > maxRSS {
		t.Errorf("peak memory %d MiB, want at most %d MiB", r.maxRSS>>20, maxRSS>>20)
	}
}

// An endless input (/dev/zero, as a snapshot, as standard input, as a
// --config) is read to its limit and refused, naming the limit: it no
// longer reads until memory runs out. The snapshot's limit for what is
// not a regular file is 256 MiB, which is what such a read may cost.
func TestInputLimitsDevZero(t *testing.T) {
	t.Parallel()
	const stream = "larger than 256 MiB, the limit for a snapshot read from standard input, a pipe or a device"
	expectLimit(t, runLimited(t, nil, "render", "-f", "/dev/zero", "--node-name=n1"), "read /dev/zero: "+stream, 400<<20)
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	expectLimit(t, runLimited(t, zero, "render", "-f", "-", "--node-name=n1"), "read <stdin>: "+stream, 400<<20)
	expectLimit(t, runLimited(t, nil, "render", "--example", "--config", "/dev/zero"),
		"--config /dev/zero: larger than 4 MiB, the limit for a --config file", 100<<20)
}

// The probe's alias bomb: a 1 MB string aliased 3000 times, 3 GB once
// expanded, ran the process out of memory with a runtime trace. It is
// refused at once, as a snapshot and as a --config.
func TestInputLimitsAliasBomb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bomb := func(name, head, list string) string {
		var b strings.Builder
		b.WriteString(head + "&a " + strings.Repeat("x", 1<<20) + "\n" + list + "\n")
		for range 3000 {
			b.WriteString("- *a\n")
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	snap := bomb("snap.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  annotations:\n    x: ", "bomb:")
	expectLimit(t, runLimited(t, nil, "render", "-f", snap, "--node-name=n1"), snap+": YAML aliases expand the document", 150<<20)
	config := bomb("kp.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: ", "nodePortAddresses:")
	expectLimit(t, runLimited(t, nil, "render", "--example", "--config", config), "--config "+config+": YAML aliases expand the document", 150<<20)
}

// A snapshot file over 1 GiB (sparse: no disk) is refused by its size,
// before it is mapped or read.
func TestInputLimitsLargeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: List\nitems: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 1<<30+1); err != nil {
		t.Fatal(err)
	}
	expectLimit(t, runLimited(t, nil, "render", "-f", path, "--node-name=n1"),
		"read "+path+": larger than 1 GiB, the limit for a snapshot file", 100<<20)
}
