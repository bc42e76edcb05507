package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/ctsysctl"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// fakeProcSys makes a /proc/sys of files under a temporary directory.
func fakeProcSys(t *testing.T, values map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, v := range values {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A plan lists the sysctls whose value differs, and apply writes those
// and no other.
func TestPlanSysctls(t *testing.T) {
	root := fakeProcSys(t, map[string]string{
		"net/ipv4/conf/all/route_localnet": "0\n",
		"net/ipv4/ip_forward":              "1\n",
	})
	wanted := [][2]string{
		{"net/ipv4/conf/all/route_localnet", "1"},
		{"net/ipv4/ip_forward", "1"},
		{"net/ipv4/vs/conntrack", "1"},
	}
	got, err := planSysctls(root, wanted)
	if err != nil {
		t.Fatal(err)
	}
	want := diff.SysctlChanges{
		{Name: "net.ipv4.conf.all.route_localnet", Current: "0", Wanted: "1"},
		{Name: "net.ipv4.vs.conntrack", Current: "", Wanted: "1"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("planned %+v, want %+v", got, want)
	}
	// Written: only what the plan shows.
	root2 := fakeProcSys(t, map[string]string{
		"net/ipv4/conf/all/route_localnet": "0\n",
		"net/ipv4/ip_forward":              "0\n",
	})
	if err := writeSysctls(root2, got[:1]); err != nil {
		t.Fatal(err)
	}
	for path, v := range map[string]string{"net/ipv4/conf/all/route_localnet": "1", "net/ipv4/ip_forward": "0\n"} {
		if b, _ := os.ReadFile(filepath.Join(root2, path)); string(b) != v {
			t.Errorf("%s = %q, want %q", path, b, v)
		}
	}
}

// In iptables mode the localhost NodePorts want route_localnet, as in
// kube-proxy; nftables mode sets no sysctl.
func TestWantedSysctls(t *testing.T) {
	d := renderFor(t, string(example.Snapshot), ModeIPTables)
	if w := wantedSysctls(d, nil); len(w) != 1 || w[0] != [2]string{"net/ipv4/conf/all/route_localnet", "1"} {
		t.Errorf("iptables mode wants %v", w)
	}
	d.families = []nodetable.Family{nodetable.IPv6}
	if w := wantedSysctls(d, nil); len(w) != 0 {
		t.Errorf("an IPv6-only run wants %v", w)
	}
	d.families = []nodetable.Family{nodetable.IPv4}
	d.cfg.LocalhostNodePorts = false
	if w := wantedSysctls(d, nil); len(w) != 0 {
		t.Errorf("without localhost NodePorts, iptables mode wants %v", w)
	}
	if w := wantedSysctls(renderFor(t, string(example.Snapshot), ModeNFTables), nil); len(w) != 0 {
		t.Errorf("nftables mode wants %v", w)
	}
	if w := wantedSysctls(renderFor(t, string(example.Snapshot), ModeIPVS), &ipvsBackend{strictARP: true}); len(w) < 6 {
		t.Errorf("ipvs mode with strict ARP wants %v", w)
	}
}

// A plan whose rules match but whose sysctls do not is a plan with
// changes, and its text shows them first.
func TestSysctlsInPlan(t *testing.T) {
	d := renderFor(t, string(example.Snapshot), ModeIPTables)
	p := modePlans(d)["same"]
	if !p.empty() {
		t.Fatal("the same rules are not an empty plan")
	}
	p.setSysctls(diff.SysctlChanges{{Name: "net.ipv4.conf.all.route_localnet", Current: "0", Wanted: "1"}})
	if p.empty() || !p.rulesEmpty() || p.summary().Sysctls != 1 {
		t.Fatalf("with a sysctl: empty %v, rulesEmpty %v, summary %v", p.empty(), p.rulesEmpty(), p.summary())
	}
	var b strings.Builder
	if err := p.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "--- live sysctl\n+++ desired sysctl\n@@ sysctl net.ipv4.conf.all.route_localnet @@\n") {
		t.Errorf("the plan text does not show the sysctl first:\n%s", b.String())
	}
}

// A file outside /proc/sys (the conntrack hash size) is planned and written
// at its absolute path, printed by path in a dry run, and a read-only /sys
// fails with what to do about it.
func TestAbsoluteSysctlFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hashsize")
	if err := os.WriteFile(file, []byte("1024\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := planSysctls("/nonexistent-proc-sys", [][2]string{{file, "32768"}})
	if err != nil || len(got) != 1 || got[0] != (diff.Sysctl{Name: file, Current: "1024", Wanted: "32768"}) {
		t.Fatalf("planned %+v, %v", got, err)
	}
	if err := writeSysctls("/nonexistent-proc-sys", got); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "32768" {
		t.Errorf("hash size file = %q", b)
	}
	var out strings.Builder
	dryRunSysctls(&out, got)
	if want := "# write " + file + "\n32768\n"; out.String() != want {
		t.Errorf("dry run %q, want %q", out.String(), want)
	}
	hint := sysctlHint(ctsysctl.HashsizeFile, &os.PathError{Op: "open", Path: ctsysctl.HashsizeFile, Err: syscall.EROFS})
	if !strings.Contains(hint, "/sys is mounted read-only") || !strings.Contains(hint, "--conntrack-max-per-core=0") {
		t.Errorf("read-only /sys hint: %q", hint)
	}
}
