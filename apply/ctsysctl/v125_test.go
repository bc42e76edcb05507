package ctsysctl

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const rwSysfs = "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0"

// v1.25 raised the TCP timeouts and never lowered them, and had no cap.
func TestWantedV125OnlyRaises(t *testing.T) {
	n := fakeNode(t, map[string]string{
		onlineCPUsFile: "0-63", MaxSysctl: "65536", HashsizeFile: "16384", "/proc/mounts": rwSysfs,
		TCPEstablishedTimeoutSysctl: "432000", TCPCloseWaitTimeoutSysctl: "60",
	})
	got, warn, err := n.WantedV125(Default())
	if err != nil || warn != "" {
		t.Fatalf("WantedV125: %v %q", err, warn)
	}
	// 64 CPUs: 2097152, above v1.37's cap; established kept at 432000.
	want := []Setting{{MaxSysctl, "2097152"}, {HashsizeFile, "524288"}, {TCPCloseWaitTimeoutSysctl, "3600"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WantedV125 =\n%v\nwant\n%v", got, want)
	}
}

// A read-only /sys left the hash size as it was, with v1.25's event
// message, and the rest went on.
func TestWantedV125ReadOnlySysfs(t *testing.T) {
	n := fakeNode(t, map[string]string{
		onlineCPUsFile: "0-1", MaxSysctl: "65536", HashsizeFile: "16384",
		"/proc/mounts":              "proc /proc proc rw 0 0\nsysfs /sys sysfs ro,nosuid 0 0",
		TCPEstablishedTimeoutSysctl: "3600", TCPCloseWaitTimeoutSysctl: "60",
	})
	got, warn, err := n.WantedV125(Config{MaxPerCore: 32768, Min: 131072, TCPEstablishedTimeout: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn, "docker issue #24000") {
		t.Errorf("warning %q", warn)
	}
	want := []Setting{{MaxSysctl, "131072"}, {TCPEstablishedTimeoutSysctl, "86400"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WantedV125 = %v, want %v", got, want)
	}
}
