package cli

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readSysctl reads a sysctl in the node's namespace.
func (n *e2eNode) readSysctl(t *testing.T, name string) string {
	t.Helper()
	out, err := n.lab.Node().Run(t.Context(), "sysctl", "-n", name)
	if err != nil {
		t.Fatalf("sysctl -n %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// TestE2EConntrackSettings: plan lists the conntrack sysctls that
// kube-proxy's settings change (its defaults, and the flags given), apply
// writes them, and a second plan has nothing left to do.
func TestE2EConntrackSettings(t *testing.T) {
	n := newE2ENode(t, "nft")
	args := append([]string{"--conntrack-tcp-timeout-established=2h", "--conntrack-udp-timeout=45s", "--conntrack-tcp-be-liberal"}, exampleArgs...)
	// A new namespace starts with the kernel's timeouts.
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_close_wait"); got != "60" {
		t.Fatalf("close_wait in a new namespace: %s, want the kernel's 60", got)
	}
	expect(t, n.run("plan", args...), ExitChanges,
		"@@ sysctl net.netfilter.nf_conntrack_tcp_timeout_established @@\n-net.netfilter.nf_conntrack_tcp_timeout_established = 432000\n+net.netfilter.nf_conntrack_tcp_timeout_established = 7200\n",
		"-net.netfilter.nf_conntrack_tcp_timeout_close_wait = 60\n+net.netfilter.nf_conntrack_tcp_timeout_close_wait = 3600\n",
		"+net.netfilter.nf_conntrack_tcp_be_liberal = 1\n",
		"+net.netfilter.nf_conntrack_udp_timeout = 45\n")
	expect(t, n.run("apply", args...), ExitOK)
	for name, want := range map[string]string{
		"net.netfilter.nf_conntrack_tcp_timeout_established": "7200",
		"net.netfilter.nf_conntrack_tcp_timeout_close_wait":  "3600",
		"net.netfilter.nf_conntrack_tcp_be_liberal":          "1",
		"net.netfilter.nf_conntrack_udp_timeout":             "45",
	} {
		if got := n.readSysctl(t, name); got != want {
			t.Errorf("after apply %s = %s, want %s", name, got, want)
		}
	}
	// be_liberal given: rendered as kube-proxy, which sets it first.
	if save := n.save(); strings.Contains(save, "--ctstate INVALID") {
		t.Errorf("with --conntrack-tcp-be-liberal the INVALID drop rule must be absent:\n%s", save)
	}
	if r := expect(t, n.run("plan", args...), ExitOK); strings.Contains(r.stdout, "sysctl") {
		t.Errorf("a second plan still changes sysctls:\n%s", r)
	}
}

// TestE2EConntrackTableSizeReadOnlyInNamespace: the table size is the
// initial namespace's alone; a plan that would raise it in another one
// says so once and leaves it out, and the timeouts still come.
func TestE2EConntrackTableSizeReadOnlyInNamespace(t *testing.T) {
	n := newE2ENode(t, "nft")
	cur, err := strconv.Atoi(n.readSysctl(t, "net.netfilter.nf_conntrack_max"))
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(cur * 2)
	r := n.run("plan", append([]string{"--conntrack-min=" + want}, exampleArgs...)...)
	if r.code != ExitChanges || !strings.Contains(r.stderr, "warning: nf_conntrack_max ("+strconv.Itoa(cur)+")") ||
		!strings.Contains(r.stderr, "read-only in this network namespace") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("want exit 1 and one warning about the read-only table size:\n%s", r)
	}
	if strings.Contains(r.stdout, "nf_conntrack_max") || strings.Contains(r.stdout, "hashsize") {
		t.Errorf("the plan lists what the namespace cannot set:\n%s", r)
	}
	if !strings.Contains(r.stdout, "+net.netfilter.nf_conntrack_tcp_timeout_close_wait = 3600") {
		t.Errorf("the timeouts are the namespace's own and must be planned:\n%s", r)
	}
}

// TestE2EConntrackSettingsChecked: a negative value is refused as
// kube-proxy's validation does, and the config file's conntrack section is
// used, naming its field in errors.
func TestE2EConntrackSettingsChecked(t *testing.T) {
	n := newE2ENode(t, "nft")
	r := expect(t, n.run("plan", append([]string{"--conntrack-min=-1"}, exampleArgs...)...), ExitError)
	if !strings.Contains(r.stderr, "--conntrack-min: must be greater than or equal to 0") {
		t.Errorf("negative --conntrack-min:\n%s", r)
	}
	cfg := n.dir + "/kp.yaml"
	writeFile(t, cfg, "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconntrack:\n  udpStreamTimeout: 150s\n  tcpCloseWaitTimeout: -1s\n")
	r = expect(t, n.run("plan", append([]string{"--config=" + cfg}, exampleArgs...)...), ExitError)
	if !strings.Contains(r.stderr, "conntrack.tcpCloseWaitTimeout") || !strings.Contains(r.stderr, "must be greater than or equal to 0") {
		t.Errorf("negative conntrack.tcpCloseWaitTimeout from the file:\n%s", r)
	}
	writeFile(t, cfg, "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nconntrack:\n  udpStreamTimeout: 150s\n  tcpCloseWaitTimeout: 0s\n")
	r = expect(t, n.run("plan", append([]string{"--config=" + cfg}, exampleArgs...)...), ExitChanges,
		"+net.netfilter.nf_conntrack_udp_timeout_stream = 150\n")
	if strings.Contains(r.stdout, "close_wait") {
		t.Errorf("tcpCloseWaitTimeout 0s leaves close_wait alone:\n%s", r)
	}
}

// TestE2EProxyConntrackAsV125: proxy, kube-proxy v1.25's userspace mode,
// sets the TCP timeouts at startup as v1.25 did, only raising them: the
// CLOSE_WAIT default of an hour goes in, an established timeout above
// the flag's stays. v1.25 had no be_liberal or UDP timeout flags.
func TestE2EProxyConntrackAsV125(t *testing.T) {
	n := newProxyNode(t)
	if _, err := n.lab.Node().Run(t.Context(), "sysctl", "-w", "net.netfilter.nf_conntrack_tcp_timeout_established=500000"); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(n.dir, "snapshot.yaml")
	writeSnapshot(t, snap, proxyBefore)
	p := startProxy(t, n, "-f", snap, "--node-name=node1", "--family=ipv4", "--cluster-cidr=10.244.0.0/16",
		"--conntrack-tcp-timeout-established=2h", "-v=2", "--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256")
	waitProxyReady(t, p)
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_close_wait"); got != "3600" {
		t.Errorf("close_wait = %s, want 3600 raised from the kernel's 60", got)
	}
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_established"); got != "500000" {
		t.Errorf("established = %s, want 500000 kept: v1.25 only raised it", got)
	}
	if code := p.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, p.output())
	}
	r := n.run("proxy", "--example", "--conntrack-udp-timeout=45s")
	if r.code != ExitError || !strings.Contains(r.stderr, "unknown flag: --conntrack-udp-timeout") {
		t.Errorf("proxy --conntrack-udp-timeout: want exit 2, unknown flag:\n%s", r)
	}
}

// TestE2EUserspaceConntrackAsV125: apply --mode=userspace sets the
// conntrack timeouts as kube-proxy v1.25 did, only raising them; the
// iptables mode sets them as v1.37 does, lower or higher.
func TestE2EUserspaceConntrackAsV125(t *testing.T) {
	n := newE2ENode(t, "nft")
	if _, err := n.lab.Node().Run(t.Context(), "sysctl", "-w", "net.netfilter.nf_conntrack_tcp_timeout_established=500000"); err != nil {
		t.Fatal(err)
	}
	expect(t, n.run("apply", userspaceArgs...), ExitOK)
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_close_wait"); got != "3600" {
		t.Errorf("userspace: close_wait = %s, want 3600", got)
	}
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_established"); got != "500000" {
		t.Errorf("userspace: established = %s, want 500000 kept as v1.25 kept it", got)
	}
	// Off with the userspace rules before iptables mode, as a switch of
	// modes goes: else apply rightly warns that they are still there.
	expect(t, n.run("reset", "--mode=userspace"), ExitOK)
	expect(t, n.run("apply", exampleArgs...), ExitOK)
	if got := n.readSysctl(t, "net.netfilter.nf_conntrack_tcp_timeout_established"); got != "86400" {
		t.Errorf("iptables: established = %s, want 86400 as v1.37 sets it", got)
	}
}
