package conntrackvm

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// settingFiles are every file kube-proxy's conntrack settings write.
var settingFiles = []string{
	maxFile, hashsizeFile, establishedFile,
	"/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal",
	"/proc/sys/net/netfilter/nf_conntrack_udp_timeout",
	"/proc/sys/net/netfilter/nf_conntrack_udp_timeout_stream",
}

// snapshot reads every setting file.
func snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range settingFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = strings.TrimSpace(string(b))
	}
	return out
}

// restore writes the values of a snapshot back, the hash size first.
func restore(t *testing.T, s map[string]string) {
	t.Helper()
	for _, f := range settingFiles {
		if err := os.WriteFile(f, []byte(s[f]), 0o644); err != nil {
			t.Fatalf("write %s: %v", f, err)
		}
	}
}

// syncBuffer is a log that kube-proxy writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runKubeProxy starts kube-proxy with flags, waits until it has built its
// proxier (which it does after setting the conntrack sysctls), and stops it.
func runKubeProxy(t *testing.T, flags []string) {
	t.Helper()
	var log syncBuffer
	args := append([]string{"--kubeconfig=" + guestKubeconfig, "--hostname-override=" + guestNode, "--proxy-mode=iptables", "--v=2"}, flags...)
	cmd := exec.Command(guestKubeProxy, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(log.String(), "Using iptables Proxier") {
		select {
		case err := <-exited:
			t.Fatalf("kube-proxy %v exited before its proxier: %v\n%s", flags, err, log.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("kube-proxy %v: no proxier after 3 minutes\n%s", flags, log.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-exited
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "sysctl") || strings.Contains(l, "onntrack") {
			t.Logf("kube-proxy: %s", l)
		}
	}
}

// TestGuestConntrackAsKubeProxy: from the same starting values, kube-proxy
// v1.37.2 and `apply` with the same flags leave the same table size, hash
// size, timeouts and be_liberal.
func TestGuestConntrackAsKubeProxy(t *testing.T) {
	vmtest.RequireGuest(t)
	if err := vmtest.SetupUserNet(); err != nil {
		t.Fatal(err)
	}
	kernel := snapshot(t)
	small := maps.Clone(kernel)
	small[maxFile], small[hashsizeFile] = "65536", "1024"
	large := maps.Clone(kernel)
	large[maxFile], large[hashsizeFile] = "2000000", "500000"
	for _, tc := range []struct {
		name  string
		start map[string]string
		flags []string
	}{
		{"defaults from a small table", small, nil},
		{"every flag", small, []string{"--conntrack-max-per-core=150000", "--conntrack-tcp-timeout-established=3h",
			"--conntrack-tcp-timeout-close-wait=30m", "--conntrack-tcp-be-liberal", "--conntrack-udp-timeout=45s", "--conntrack-udp-timeout-stream=150s"}},
		{"a larger table is kept", large, []string{"--conntrack-min=300000"}},
		{"per core 0 leaves the size", small, []string{"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restore(t, tc.start)
			runKubeProxy(t, tc.flags)
			want := snapshot(t)
			restore(t, tc.start)
			if _, errOut, code := tool(t, append(append([]string{"apply"}, tc.flags...), exampleArgs...)...); code != 0 {
				t.Fatalf("apply: exit %d: %s", code, errOut)
			}
			got := snapshot(t)
			t.Logf("from %v\nkube-proxy left %v", tc.start, want)
			for _, f := range settingFiles {
				if got[f] != want[f] {
					t.Errorf("%s: the tool left %s, kube-proxy %s", f, got[f], want[f])
				}
			}
		})
	}
}
