package nftables

import (
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// scaleTable renders n synthetic Services with 10 endpoints each.
func scaleTable(n int) *nft.Ruleset {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return render.NFTables(synthetic.Table(n, 10), cfg)
}

// timed runs fn on a locked thread and returns its wall time and the
// thread's CPU time (user+system): the kernel's work for a netlink
// request is done in the calling thread, and the CPU time does not depend
// on what else the machine runs.
func timed(t testing.TB, fn func() error) (wall, cpu time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &before)
	start := time.Now()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	wall = time.Since(start)
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &after)
	return wall, rusageCPU(after) - rusageCPU(before)
}

func rusageCPU(r unix.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// TestScale writes and reads a large table once and logs the times, with
// `nft -f` and `nft list table` of the same table for reference. It runs
// only with SVCPROXY_NFT_SCALE set to the number of Services (the issue's
// figure is 10000), since a 10k table takes seconds:
//
//	SVCPROXY_NFT_SCALE=10000 go test ./apply/nftables -run TestScale -v
func TestScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SVCPROXY_NFT_SCALE"))
	if n <= 0 {
		// Opt-in measurement, not a missing prerequisite: a plain skip,
		// also under CI.
		t.Skip("set SVCPROXY_NFT_SCALE to the number of Services to measure")
	}
	rs := scaleTable(n)
	ns := newTestNS(t)
	c := ns.open()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }

	var b *Batch
	buildWall, _ := timed(t, func() (err error) { b, err = tableBatch(c, rs); return err })
	ops, size := b.Ops(), len(b.enc.Buf)
	commitWall, commitCPU := timed(t, b.Commit)
	var got *nft.Ruleset
	readWall, readCPU := timed(t, func() (err error) { got, err = c.ReadTable(rs.Family, rs.Table); return err })
	if !rs.Equal(got) {
		t.Errorf("ReadTable differs from the render")
	}
	t.Logf("%d Services x 10 endpoints: %d chains, %d sets, %d ops, %.1f MB batch",
		n, len(rs.Chains), len(rs.Sets), ops, float64(size)/1e6)
	t.Logf("writeTable: build %s, commit %s wall / %s CPU", ms(buildWall), ms(commitWall), ms(commitCPU))
	t.Logf("ReadTable: %s wall / %s CPU", ms(readWall), ms(readCPU))

	for _, ref := range []struct {
		what  string
		stdin string
		args  []string
	}{
		{"nft -f", rs.Script(), []string{"-f", "-"}},
		{"nft list table", "", []string{"list", "table", string(rs.Family), rs.Table}},
	} {
		cmd := exec.Command("ip", append([]string{"netns", "exec", ns.name, "nft"}, ref.args...)...)
		cmd.Stdin = strings.NewReader(ref.stdin)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil && ref.stdin != "" {
			t.Fatalf("%s: %v: %.500s", ref.what, err, out)
		}
		ps := cmd.ProcessState
		t.Logf("%s (reference): %s wall / %s CPU", ref.what, ms(time.Since(start)), ms(ps.UserTime()+ps.SystemTime()))
	}
}
