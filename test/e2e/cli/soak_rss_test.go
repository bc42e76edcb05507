package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssSampler reads a process's resident set size every period.
type rssSampler struct {
	pid   int
	start time.Time

	mu      sync.Mutex
	samples []rssSample
	err     error // the first failed read
}

// rssSample is the RSS in KB at a time since the soak started.
type rssSample struct {
	at time.Duration
	kb float64
}

func (r *rssSampler) run(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		kb, err := vmRSS(r.pid)
		r.mu.Lock()
		if err != nil && r.err == nil {
			r.err = err
		} else if err == nil {
			r.samples = append(r.samples, rssSample{at: time.Since(r.start), kb: float64(kb)})
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// vmRSS returns the VmRSS line of /proc/PID/status, in KB.
func vmRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// slopePerMinute is the least-squares slope of the samples, in KB per
// minute; 0 for fewer than two.
func slopePerMinute(samples []rssSample) float64 {
	if len(samples) < 2 {
		return 0
	}
	var sx, sy float64
	for _, s := range samples {
		sx += s.at.Minutes()
		sy += s.kb
	}
	n := float64(len(samples))
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for _, s := range samples {
		dx := s.at.Minutes() - mx
		sxy += dx * (s.kb - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

func TestSlopePerMinute(t *testing.T) {
	at := func(sec int) time.Duration { return time.Duration(sec) * time.Second }
	// A step of h KB in the middle of a minute, sampled every 100 ms:
	// a least-squares slope of 1.5 h per minute (soakRSSStep).
	var step []rssSample
	for i := range 601 {
		kb := 0.0
		if i > 300 {
			kb = 1000
		}
		step = append(step, rssSample{at: time.Duration(i) * 100 * time.Millisecond, kb: kb})
	}
	for _, c := range []struct {
		name    string
		samples []rssSample
		want    float64
	}{
		{"none", nil, 0},
		{"one", []rssSample{{at(0), 5}}, 0},
		{"flat", []rssSample{{at(0), 7}, {at(30), 7}, {at(60), 7}}, 0},
		{"1 MB a minute", []rssSample{{at(0), 1000}, {at(30), 1512}, {at(60), 2024}}, 1024},
		{"2 MB a minute, downward", []rssSample{{at(0), 4096}, {at(30), 3072}}, -2048},
		{"a step", step, 1500},
	} {
		if got := slopePerMinute(c.samples); math.Abs(got-c.want) > math.Max(1, math.Abs(c.want)/100) {
			t.Errorf("%s: %.1f KB/min, want %.1f", c.name, got, c.want)
		}
	}
}
