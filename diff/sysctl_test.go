package diff

import (
	"strings"
	"testing"
)

func TestSysctlNames(t *testing.T) {
	for path, name := range map[string]string{
		"net/ipv4/conf/all/route_localnet": "net.ipv4.conf.all.route_localnet",
		"net/ipv4/conf/eth0.100/rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
	} {
		if got := SysctlName(path); got != name {
			t.Errorf("SysctlName(%q) = %q, want %q", path, got, name)
		}
		if got := (Sysctl{Name: name}).Path(); got != path {
			t.Errorf("Path of %q = %q, want %q", name, got, path)
		}
	}
	// A setting that is not a sysctl keeps its absolute path as its name.
	const hash = "/sys/module/nf_conntrack/parameters/hashsize"
	if got := SysctlName(hash); got != hash || (Sysctl{Name: hash}).Path() != hash {
		t.Errorf("SysctlName(%q) = %q, Path %q", hash, got, (Sysctl{Name: hash}).Path())
	}
	if got := SysctlValue("32768\t60999\n"); got != "32768 60999" {
		t.Errorf("SysctlValue: %q", got)
	}
}

// Sysctl changes are a diff of their own, in the plan's text: a hunk per
// sysctl, its value now removed and the one wanted added.
func TestSysctlText(t *testing.T) {
	var b strings.Builder
	if err := (SysctlChanges{}).WriteText(&b); err != nil || b.Len() != 0 {
		t.Fatalf("no changes wrote %q, %v", b.String(), err)
	}
	s := SysctlChanges{
		{Name: "net.ipv4.conf.all.route_localnet", Current: "0", Wanted: "1"},
		{Name: "net.ipv4.vs.conntrack", Wanted: "1"},
	}
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `--- live sysctl
+++ desired sysctl
@@ sysctl net.ipv4.conf.all.route_localnet @@
-net.ipv4.conf.all.route_localnet = 0
+net.ipv4.conf.all.route_localnet = 1
@@ sysctl net.ipv4.vs.conntrack @@
+net.ipv4.vs.conntrack = 1
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := (Summary{Sysctls: 2}).String(); !strings.HasSuffix(got, ", sysctls ~2") {
		t.Errorf("summary %q does not count the sysctls", got)
	}
}
