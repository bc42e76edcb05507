package testcluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ),
// 100 per second on every Linux architecture this project builds for.
const clockTick = 10 * time.Millisecond

// Usage is what a running process has used so far, from /proc.
type Usage struct {
	// CPU is its user and system time (utime + stime).
	CPU time.Duration
	// ChildrenCPU is the user and system time of its children that it has
	// waited for (cutime + cstime): kube-proxy's iptables-restore and nft
	// runs, for instance.
	ChildrenCPU time.Duration
	// PeakRSS is its peak resident set size (VmHWM), in bytes.
	PeakRSS int64
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Usage reads the process's CPU times and peak RSS. The process must still
// be running: its /proc entry goes when it is reaped.
func (p *Process) Usage() (Usage, error) {
	if err := p.Running(); err != nil {
		return Usage{}, err
	}
	return ReadUsage(p.PID())
}

// ReadUsage reads the usage of process pid from /proc/PID/stat and
// /proc/PID/status.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields are counted from the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, stat)
	}
	f := strings.Fields(string(stat[i+1:])) // f[0] is field 3, state
	if len(f) < 15 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields after the name, want 15", pid, len(f))
	}
	ticks := make([]int64, 4) // fields 14-17: utime, stime, cutime, cstime
	for k := range ticks {
		if ticks[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return u, fmt.Errorf("/proc/%d/stat field %d: %w", pid, 14+k, err)
		}
	}
	u.CPU = time.Duration(ticks[0]+ticks[1]) * clockTick
	u.ChildrenCPU = time.Duration(ticks[2]+ticks[3]) * clockTick
	u.PeakRSS, err = peakRSS(pid)
	return u, err
}

// peakRSS is the VmHWM line of /proc/PID/status, in bytes.
func peakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}
