// Package dataplane benchmarks the data plane that each proxy mode
// programs: how long the rules take to program, how fast connections
// are set up through them and how many the node takes per second, and
// how much kernel memory the rules hold. It is test-only; the figures
// of docs/PERFORMANCE.md come from hack/bench-dataplane.sh, which runs
// BenchmarkDataplane on the host (iptables, nftables) and, through
// TestDataplaneInVM, in the qemu VM (ipvs, which this host's kernel
// lacks, and the others beside it for a relative comparison).
package dataplane

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// The flags default to the environment variables of the same meaning, so
// that the host sets them with DATAPLANE_*; the VM's test process gets them
// as arguments from TestDataplaneInVM.
var (
	sizesFlag = flag.String("dataplane.sizes", envOr("DATAPLANE_SIZES", "100"),
		"comma-separated Service counts (DATAPLANE_SIZES; CI runs the default, 100)")
	modesFlag = flag.String("dataplane.modes", envOr("DATAPLANE_MODES", "iptables,nftables,nftables-compact,ipvs"),
		"comma-separated modes (DATAPLANE_MODES)")
	samplesFlag = flag.Int("dataplane.samples", envInt("DATAPLANE_SAMPLES", 200),
		"connections timed to each of the first and the last Service (DATAPLANE_SAMPLES)")
	windowFlag = flag.Duration("dataplane.window", envDuration("DATAPLANE_WINDOW", time.Second),
		"how long connections are opened through one Service to count them per second (DATAPLANE_WINDOW)")
)

// perService is the number of endpoints of every synthetic Service.
const perService = 10

func TestMain(m *testing.M) { vmtest.Main(m) }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}

// parseSizes reads a comma-separated list of positive Service counts.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 65536 {
			return nil, fmt.Errorf("dataplane: bad size %q in %q (1 to 65536 Services)", f, s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// BenchmarkDataplane runs, per mode and size (BenchmarkDataplane/mode=M/
// services=N), one whole experiment in a fresh lab and reports:
//
//   - program-s: Plan+Apply of N Services x 10 endpoints into the empty
//     node (rendering outside the timer);
//   - change-s: Plan+Apply of one endpoint of Service N/2 changing, with
//     the same client and the caches a --state-dir gives the CLI;
//   - first-us, last-us: the median TCP connect time (SYN sent to
//     established, through the DNAT to a real backend) from the client
//     namespace to the first and the last Service in iptables' rule order,
//     timed in alternation; slowest-us: the slowest of those connects;
//   - first-conn/s, last-conn/s: new connections opened and reset per
//     second through the first and through the last Service by one
//     connecting thread, for -dataplane.window each; stalls: how many of
//     them waited for a retransmitted SYN (over 200 ms), which would
//     make the rate say more about one lost packet than about the rules;
//   - kmem-MB: the growth of the kernel's Slab+VmallocUsed+Percpu
//     (/proc/meminfo, machine-wide) across the program-s step.
//
// ns/op is the whole experiment, lab included; it means nothing alone.
func BenchmarkDataplane(b *testing.B) {
	sizes, err := parseSizes(*sizesFlag)
	if err != nil {
		b.Fatal(err)
	}
	// The VM's kernel, for the document (hack/bench-dataplane.sh greps
	// it); benchmarks' logs do not show without -test.v.
	var uts unix.Utsname
	if vmtest.InGuest() && unix.Uname(&uts) == nil {
		fmt.Printf("dataplane: kernel %s, %d CPUs\n", unix.ByteSliceToString(uts.Release[:]), runtime.NumCPU())
	}
	for name := range strings.SplitSeq(*modesFlag, ",") {
		m, ok := modeByName(strings.TrimSpace(name))
		if !ok {
			b.Fatalf("dataplane: unknown mode %q (have %s)", name, modeNames())
		}
		for _, n := range sizes {
			b.Run(fmt.Sprintf("mode=%s/services=%d", m.name, n), func(b *testing.B) {
				m.skipUnlessHere(b)
				var res result
				for b.Loop() {
					res = experiment(b, m, n)
				}
				res.report(b)
			})
		}
	}
}
