package cluster_test

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// TestBuildOnEveryCPU: a snapshot large enough for the builder to split
// its work among goroutines builds to the tables it builds on one CPU,
// from scratch and incrementally after a change. Run with -race, it also
// checks that the goroutines share nothing they write.
func TestBuildOnEveryCPU(t *testing.T) {
	snap := versionedSnapshot(400)
	cfg := cluster.Config{NodeName: "node1"}
	build := func(procs int, b *cluster.Builder) any {
		t.Helper()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		tables, warnings, err := b.Build(snap, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return []any{tables, warnings}
	}
	var parallel cluster.Builder
	for round := range 3 {
		if round > 0 {
			moveEndpoint(snap, 7*round, round)
		}
		want := build(1, &cluster.Builder{})
		if diff := cmp.Diff(want, build(4, &parallel), cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})); diff != "" {
			t.Fatalf("round %d: on four CPUs (-one +four):\n%s", round, diff)
		}
	}
}
