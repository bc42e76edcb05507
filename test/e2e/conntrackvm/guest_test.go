package conntrackvm

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

const (
	maxFile         = "/proc/sys/net/netfilter/nf_conntrack_max"
	establishedFile = "/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established"
	hashsizeFile    = "/sys/module/nf_conntrack/parameters/hashsize"
)

var exampleArgs = []string{"--example", "--cluster-cidr=10.244.0.0/16", "--family=ipv4", "--iptables-backend=nft"}

func readInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func write(t *testing.T, path string, v int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// tool runs the binary and returns its stdout, stderr and exit code.
func tool(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(guestTool, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	t.Logf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

// TestGuestConntrackLands: from a small table and hash, apply raises
// nf_conntrack_max to --conntrack-max-per-core times the CPUs and the hash
// size to a quarter of it, sets the timeout, a second plan has nothing to
// do, and a smaller setting never lowers them.
func TestGuestConntrackLands(t *testing.T) {
	vmtest.RequireGuest(t)
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		t.Fatal(err)
	}
	const perCore = 150000 // above --conntrack-min's 131072 on any CPU count
	want := perCore * cpus.Size()
	t.Logf("%d CPUs: want nf_conntrack_max %d, hash size %d", cpus.Size(), want, want/4)
	write(t, maxFile, 65536)
	write(t, hashsizeFile, 1024)
	args := append([]string{"--conntrack-max-per-core=" + strconv.Itoa(perCore), "--conntrack-tcp-timeout-established=3h"}, exampleArgs...)

	out, _, code := tool(t, append([]string{"plan"}, args...)...)
	for _, w := range []string{
		"-net.netfilter.nf_conntrack_max = 65536\n+net.netfilter.nf_conntrack_max = " + strconv.Itoa(want) + "\n",
		"-/sys/module/nf_conntrack/parameters/hashsize = 1024\n+/sys/module/nf_conntrack/parameters/hashsize = " + strconv.Itoa(want/4) + "\n",
		"+net.netfilter.nf_conntrack_tcp_timeout_established = 10800\n",
	} {
		if code != 1 || !strings.Contains(out, w) {
			t.Fatalf("plan: exit %d, want 1 and %q", code, w)
		}
	}
	if _, errOut, code := tool(t, append([]string{"apply"}, args...)...); code != 0 || errOut != "" {
		t.Fatalf("apply: exit %d: %s", code, errOut)
	}
	if got := readInt(t, maxFile); got != want {
		t.Errorf("nf_conntrack_max = %d, want %d", got, want)
	}
	// The kernel rounds the hash size up to whole pages of buckets (512
	// of 8 bytes on 4 KiB pages); kube-proxy, and the plan, only ask that
	// it be at least a quarter of the table.
	hash := readInt(t, hashsizeFile)
	if rounded := (want/4 + 511) / 512 * 512; hash != rounded {
		t.Errorf("hash size = %d, want %d (%d rounded up to a multiple of 512)", hash, rounded, want/4)
	}
	if got := readInt(t, establishedFile); got != 10800 {
		t.Errorf("nf_conntrack_tcp_timeout_established = %d, want 10800", got)
	}
	if out, _, code := tool(t, append([]string{"plan"}, args...)...); code != 0 || strings.Contains(out, "sysctl") {
		t.Errorf("second plan: exit %d, want 0 and no sysctl", code)
	}
	small := append([]string{"--conntrack-max-per-core=1", "--conntrack-min=1", "--conntrack-tcp-timeout-established=3h"}, exampleArgs...)
	if _, errOut, code := tool(t, append([]string{"apply"}, small...)...); code != 0 {
		t.Fatalf("apply with a smaller table: exit %d: %s", code, errOut)
	}
	if got, h := readInt(t, maxFile), readInt(t, hashsizeFile); got != want || h != hash {
		t.Errorf("a smaller setting lowered the table to %d, hash %d; want %d and %d kept", got, h, want, hash)
	}
}
