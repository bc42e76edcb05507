package ctsysctl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMax(t *testing.T) {
	for _, tc := range []struct {
		name       string
		perCore    int32
		min        int32
		cpus, want int
	}{
		{"defaults on 2 CPUs: min wins", 32768, 131072, 2, 131072},
		{"defaults on 8 CPUs: scaled", 32768, 131072, 8, 262144},
		{"scaled capped at 1Mi", 32768, 131072, 64, 1 << 20},
		{"cap wins over a larger min", 32768, 4 << 20, 64, 1 << 20},
		{"min above the cap when not scaled past it", 1, 4 << 20, 2, 4 << 20},
		{"per core 0 leaves it", 0, 131072, 8, 0},
	} {
		c := Config{MaxPerCore: tc.perCore, Min: tc.min}
		if got := c.Max(tc.cpus); got != tc.want {
			t.Errorf("%s: Max(%d) = %d, want %d", tc.name, tc.cpus, got, tc.want)
		}
	}
}

func TestNegativeFlag(t *testing.T) {
	if f := Default().NegativeFlag(); f != "" {
		t.Fatalf("defaults: %s", f)
	}
	c := Default()
	c.UDPStreamTimeout = -time.Second
	if f := c.NegativeFlag(); f != "conntrack-udp-timeout-stream" {
		t.Errorf("negative udp stream timeout: %q", f)
	}
	c = Default()
	c.Min = -1
	if f := c.NegativeFlag(); f != "conntrack-min" {
		t.Errorf("negative min: %q", f)
	}
}

// fakeNode lays out a node's files under a temporary root.
func fakeNode(t *testing.T, files map[string]string) Node {
	t.Helper()
	n := Node{Root: t.TempDir()}
	for path, v := range files {
		p := n.file(path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func TestNumCPUReadsOnlineList(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-3,8-11"})
	if got := n.NumCPU(); got != 8 {
		t.Errorf("NumCPU = %d, want 8", got)
	}
}

func TestWantedDefaultsRaiseSmallTable(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-1", MaxSysctl: "65536", HashsizeFile: "16384"})
	got, warn, err := n.Wanted(Default())
	if err != nil || warn != "" {
		t.Fatalf("Wanted: %v %q", err, warn)
	}
	want := []Setting{
		{MaxSysctl, "131072"}, {HashsizeFile, "32768"},
		{TCPEstablishedTimeoutSysctl, "86400"}, {TCPCloseWaitTimeoutSysctl, "3600"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Wanted =\n%v\nwant\n%v", got, want)
	}
}

func TestWantedNeverLowersTableOrHash(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-1", MaxSysctl: "262144", HashsizeFile: "262144"})
	c := Config{MaxPerCore: 32768, Min: 131072}
	got, _, err := n.Wanted(c)
	if err != nil || len(got) != 0 {
		t.Errorf("Wanted = %v, %v; want nothing", got, err)
	}
}

func TestWantedRaisesHashAlone(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-7", MaxSysctl: "300000", HashsizeFile: "1024"})
	got, _, err := n.Wanted(Config{MaxPerCore: 32768, Min: 131072})
	if err != nil {
		t.Fatal(err)
	}
	// 8 CPUs: 262144 wanted, the table has more; the hash follows the
	// wanted size, not the table's.
	if want := []Setting{{HashsizeFile, "65536"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Wanted = %v, want %v", got, want)
	}
}

func TestWantedMissingHashsizeIsAnError(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-1", MaxSysctl: "65536"})
	if _, _, err := n.Wanted(Default()); err == nil || !strings.Contains(err.Error(), "hash size") {
		t.Errorf("Wanted without a hash size: %v", err)
	}
	if got, _, err := n.Wanted(Config{}); err != nil || len(got) != 0 {
		t.Errorf("per core 0 reads no hash size: %v %v", got, err)
	}
}

func TestWantedReadOnlyTableWarns(t *testing.T) {
	n := fakeNode(t, map[string]string{onlineCPUsFile: "0-1", MaxSysctl: "65536", HashsizeFile: "16384"})
	if err := os.Chmod(n.file(MaxSysctl), 0o444); err != nil {
		t.Fatal(err)
	}
	got, warn, err := n.Wanted(Default())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn, "read-only") || !strings.Contains(warn, "131072") {
		t.Errorf("warning %q", warn)
	}
	if want := []Setting{{TCPEstablishedTimeoutSysctl, "86400"}, {TCPCloseWaitTimeoutSysctl, "3600"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Wanted = %v, want only the timeouts %v", got, want)
	}
}

func TestWantedTimeoutsAndLiberal(t *testing.T) {
	n := fakeNode(t, nil)
	c := Config{TCPBeLiberal: true, UDPTimeout: 30 * time.Second, UDPStreamTimeout: 1500 * time.Millisecond, TCPCloseWaitTimeout: 0}
	got, _, err := n.Wanted(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []Setting{{TCPBeLiberalSysctl, "1"}, {UDPTimeoutSysctl, "30"}, {UDPStreamTimeoutSysctl, "1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Wanted = %v, want %v", got, want)
	}
}
