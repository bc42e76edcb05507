package dataplane

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// result is what one experiment measured.
type result struct {
	program, change time.Duration
	first, last     time.Duration // median connect times
	slowest         time.Duration // of all timed connects
	rateFirst       float64       // connections per second, first Service
	rateLast        float64       // and last
	stalls          int           // connects over stallThreshold in both
	kmem            int64         // bytes
}

func (r result) report(b *testing.B) {
	b.ReportMetric(r.program.Seconds(), "program-s")
	b.ReportMetric(r.change.Seconds(), "change-s")
	b.ReportMetric(float64(r.first.Nanoseconds())/1e3, "first-us")
	b.ReportMetric(float64(r.last.Nanoseconds())/1e3, "last-us")
	b.ReportMetric(float64(r.slowest.Nanoseconds())/1e3, "slowest-us")
	b.ReportMetric(r.rateFirst, "first-conn/s")
	b.ReportMetric(r.rateLast, "last-conn/s")
	b.ReportMetric(float64(r.stalls), "stalls")
	b.ReportMetric(float64(r.kmem)/(1<<20), "kmem-MB")
}

// experiment programs n Services into a fresh lab's node in mode m and
// measures it (see BenchmarkDataplane).
func experiment(b *testing.B, m mode, n int) result {
	ctx := context.Background()
	lab := newLab(b)
	prep := m.open(b, lab)
	table := synthetic.Table(n, perService)
	first, last, err := firstAndLast(table)
	if err != nil {
		b.Fatal(err)
	}
	var r result
	apply := prep(table)
	before, err := settledKernelMemory()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := apply(ctx); err != nil {
		b.Fatalf("%s, %d Services from empty: %v", m.name, n, err)
	}
	r.program = time.Since(start)
	after, err := settledKernelMemory()
	if err != nil {
		b.Fatal(err)
	}
	r.kmem = after - before
	change := prep(synthetic.WithOneEndpointChanged(table, n/2, 1))
	start = time.Now()
	if err := change(ctx); err != nil {
		b.Fatalf("%s, %d Services, one endpoint: %v", m.name, n, err)
	}
	r.change = time.Since(start)
	// A real reply from the backend through each timed Service first:
	// the connects below then time the DNAT, not a refusal or a leak.
	for _, i := range []int{first, last} {
		if name, err := lab.Client().DialTCP(ctx, serviceIP(table, i), connectTimeout); err != nil || name != "backends" {
			b.Fatalf("%s: Service %d (%s) does not reach the backend: %q, %v", m.name, i, serviceIP(table, i), name, err)
		}
	}
	medians, slowest, err := connectTimes(lab.Client(), *samplesFlag, serviceIP(table, first), serviceIP(table, last))
	if err != nil {
		b.Fatal(err)
	}
	r.first, r.last, r.slowest = medians[0], medians[1], slowest
	var stalls [2]int
	if r.rateFirst, stalls[0], err = connectRate(lab.Client(), serviceIP(table, first), *windowFlag); err != nil {
		b.Fatal(err)
	}
	if r.rateLast, stalls[1], err = connectRate(lab.Client(), serviceIP(table, last), *windowFlag); err != nil {
		b.Fatal(err)
	}
	r.stalls = stalls[0] + stalls[1]
	return r
}

// TestDataplaneInVM runs BenchmarkDataplane inside the qemu VM (TCG, one
// vCPU: its figures compare the modes with each other, never with the
// host's), where the kernel has IPVS. DATAPLANE_VM_SIZES and
// DATAPLANE_VM_MODES choose what runs there (default: the host's sizes,
// every mode); DATAPLANE_VM_TIMEOUT bounds the boot (default 40m).
func TestDataplaneInVM(t *testing.T) {
	// Plain skips, also under CI: the run is opt-in (minutes to hours),
	// and inside the VM this host-side test must not recurse. Neither is a
	// missing prerequisite.
	if os.Getenv("DATAPLANE_VM") == "" {
		t.Skip("set DATAPLANE_VM=1 to run BenchmarkDataplane inside the VM (ipvs)")
	}
	if vmtest.InGuest() {
		t.Skip("already inside the VM")
	}
	timeout := envDuration("DATAPLANE_VM_TIMEOUT", 40*time.Minute)
	if dl, ok := t.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)-30*time.Second)
	}
	bin := vmtest.BuildTest(t, ".")
	res, err := vmtest.Boot(t.Context(), vmtest.Config{
		Init: bin, Memory: "4G", Timeout: timeout, Output: t.Output(),
		Args: []string{"-test.run=^$", "-test.bench=^BenchmarkDataplane$", "-test.benchtime=1x",
			"-test.timeout=" + (timeout - 20*time.Second).Round(time.Second).String(),
			"-dataplane.sizes=" + envOr("DATAPLANE_VM_SIZES", *sizesFlag),
			"-dataplane.modes=" + envOr("DATAPLANE_VM_MODES", *modesFlag),
			"-dataplane.samples=" + strconv.Itoa(*samplesFlag),
			"-dataplane.window=" + windowFlag.String()},
	})
	if err != nil || res.Code != 0 {
		t.Fatalf("BenchmarkDataplane in the VM: %v (exit %d)", err, res.Code)
	}
}
