package ipvs

import (
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// TestBenchInVM runs the ipvs benchmarks (BenchmarkIPVSApply,
// BenchmarkIPVSRead; VMTEST_BENCH_PATTERN selects) inside the VM (TCG, one vCPU, so
// the figures are relative). It is opt-in: VMTEST_BENCH=1.
func TestBenchInVM(t *testing.T) {
	// Plain skips, also under CI: the benchmark is opt-in, and inside the
	// VM this host-side test must not recurse. Neither is a missing
	// prerequisite.
	if os.Getenv("VMTEST_BENCH") == "" {
		t.Skip("set VMTEST_BENCH=1 to benchmark ipvs apply inside the VM")
	}
	if vmtest.InGuest() {
		t.Skip("already inside the VM")
	}
	bin := vmtest.BuildTest(t, ".")
	res, err := vmtest.Boot(t.Context(), vmtest.Config{
		Init: bin, Memory: "2G", Timeout: 40 * time.Minute, Output: t.Output(),
		Args: []string{"-test.run=^$", "-test.bench=" + benchPattern(), "-test.benchtime=" + benchtime(), "-test.timeout=39m"},
	})
	if err != nil || res.Code != 0 {
		t.Fatalf("benchmark in the VM: %v (exit %d)", err, res.Code)
	}
}

// BenchmarkIPVSApply measures Plan+Apply into a lab node, at 1k and 10k
// Services x 3 endpoints (every tenth a NodePort): from empty (the node is
// reset before each, untimed) and a change of one endpoint.
func BenchmarkIPVSApply(b *testing.B) {
	if !vmtest.InGuest() {
		// By design, not a missing prerequisite: on the host this
		// benchmark always skips (also under CI); TestBenchInVM runs it in
		// the VM.
		b.Skip("needs IPVS: runs in the VM (TestBenchInVM)")
	}
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		table := synthetic.Table(n, 3)
		lab := netlab.New(b)
		c, _ := vmClient(b, lab)
		tk := &timedKernel{Kernel: c.Kernel, d: map[string]time.Duration{}}
		c.Kernel = tk
		b.Run(fmt.Sprintf("services=%d/from-empty", n), func(b *testing.B) {
			desired := renderTable(table, "rr")
			var plan, apply time.Duration
			for b.Loop() {
				b.StopTimer()
				resetNode(b, c)
				tk.reset()
				b.StartTimer()
				t0 := time.Now()
				plans, err := c.Plan(b.Context(), oneFamily(desired))
				t1 := time.Now()
				if err == nil {
					err = c.Apply(b.Context(), plans)
				}
				if err != nil {
					b.Fatal(err)
				}
				plan, apply = plan+t1.Sub(t0), apply+time.Since(t1)
			}
			reportPhases(b, plan, apply, tk)
		})
		b.Run(fmt.Sprintf("services=%d/one-endpoint", n), func(b *testing.B) {
			round := 0
			var plan, apply time.Duration
			tk.reset()
			for b.Loop() {
				round++
				b.StopTimer()
				table = synthetic.WithOneEndpointChanged(table, round*7%n, round)
				desired := renderTable(table, "rr")
				b.StartTimer()
				t0 := time.Now()
				plans, err := c.Plan(b.Context(), oneFamily(desired))
				t1 := time.Now()
				if err == nil {
					err = c.Apply(b.Context(), plans)
				}
				if err != nil {
					b.Fatal(err)
				}
				plan, apply = plan+t1.Sub(t0), apply+time.Since(t1)
				if s := plans[0].Changes.Summary(); s.DestinationsAdded == 0 || s.DestinationsAdded > 2 {
					b.Fatalf("one endpoint changed: %v", s)
				}
			}
			reportPhases(b, plan, apply, tk)
		})
	}
}

func oneFamily(rs ...*ipvs.Ruleset) []*ipvs.Ruleset { return rs }

// resetNode removes everything the tool owns from the lab node.
func resetNode(b *testing.B, c *Client) {
	plans, err := c.PlanReset(b.Context(), []nodetable.Family{nodetable.IPv4})
	if err == nil {
		err = c.Apply(b.Context(), plans)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// timedKernel adds up the time spent in each kind of kernel call.
type timedKernel struct {
	Kernel
	d map[string]time.Duration
}

func (k *timedKernel) reset() { clear(k.d) }

func (k *timedKernel) time(name string, start time.Time) { k.d[name] += time.Since(start) }

func (k *timedKernel) Services(f nodetable.Family) ([]*ipvs.VirtualServer, map[diff.IPVSDestKey]diff.IPVSConns, error) {
	defer k.time("read-ipvs", time.Now())
	return k.Kernel.Services(f)
}

func (k *timedKernel) Set(name string) (*ipvs.Set, error) {
	defer k.time("read-sets", time.Now())
	return k.Kernel.Set(name)
}

func (k *timedKernel) AddService(vs *ipvs.VirtualServer) error {
	defer k.time("add-service", time.Now())
	return k.Kernel.AddService(vs)
}

func (k *timedKernel) AddDest(vs *ipvs.VirtualServer, r ipvs.RealServer) error {
	defer k.time("add-dest", time.Now())
	return k.Kernel.AddDest(vs, r)
}

func (k *timedKernel) AddAddress(p netip.Prefix) error {
	defer k.time("add-address", time.Now())
	return k.Kernel.AddAddress(p)
}

func (k *timedKernel) AddEntry(s *ipvs.Set, e string) error {
	defer k.time("add-entry", time.Now())
	return k.Kernel.AddEntry(s, e)
}

// reportPhases reports plan and apply time per operation, and the kernel
// calls' share, in seconds.
func reportPhases(b *testing.B, plan, apply time.Duration, tk *timedKernel) {
	n := float64(b.N)
	b.ReportMetric(plan.Seconds()/n, "plan-s/op")
	b.ReportMetric(apply.Seconds()/n, "apply-s/op")
	for name, d := range tk.d {
		b.ReportMetric(d.Seconds()/n, name+"-s/op")
	}
}

// benchtime is VMTEST_BENCHTIME, or 3x.
// benchPattern is VMTEST_BENCH_PATTERN, or every ipvs benchmark.
func benchPattern() string {
	if v := os.Getenv("VMTEST_BENCH_PATTERN"); v != "" {
		return v
	}
	return "^BenchmarkIPVS"
}

func benchtime() string {
	if v := os.Getenv("VMTEST_BENCHTIME"); v != "" {
		return v
	}
	return "3x"
}
