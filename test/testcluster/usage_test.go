package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadUsage reads the test binary's own usage after it has burnt CPU
// and touched memory, so that a field read from the wrong place shows.
func TestReadUsage(t *testing.T) {
	// Spin until getrusage says 300ms of CPU were spent, however loaded
	// the machine is.
	for cpuSelf(t) < 300*time.Millisecond {
	}
	const size = 64 << 20
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	want := cpuSelf(t)
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// /proc counts in ticks, and other threads run between the two reads.
	if d := u.CPU - want; d < -50*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("CPU %v, getrusage said %v just before", u.CPU, want)
	}
	if u.PeakRSS < size {
		t.Errorf("peak RSS %d bytes after touching %d", u.PeakRSS, size)
	}
	if buf[0] != 1 {
		t.Fatal("buffer lost") // keeps buf alive until the read
	}
}

// cpuSelf is the test binary's user and system time from getrusage.
func cpuSelf(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestProcessUsage reads a started process's usage, and refuses once it
// has exited.
func TestProcessUsage(t *testing.T) {
	p, err := StartCommand("sleep", exec.Command("sleep", "30"), filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := p.Usage()
	if err != nil || u.PeakRSS <= 0 {
		t.Fatalf("usage of a running sleep: %+v, %v", u, err)
	}
	p.Stop()
	if _, err := p.Usage(); err == nil {
		t.Error("usage of an exited process: no error")
	}
}
