//go:build unix

package cli

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, user and system: the
// benchmarks report it beside the wall time, which a loaded machine
// stretches.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
