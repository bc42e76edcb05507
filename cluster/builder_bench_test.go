package cluster_test

import (
	"fmt"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// BenchmarkBuildOneEndpointChange builds the tables after one endpoint of
// one Service moved, as a watch-mode sync does: "full" with Build, which
// a one-shot command runs, and "incremental" with a Builder that built
// the snapshot before the change, as apply --watch runs. The objects carry
// a UID and resourceVersion, as the API server's do, and the changed
// slice a new resourceVersion. 1k Services; 10k too with
// SVCPROXY_BENCH_SIZES=1000,10000.
func BenchmarkBuildOneEndpointChange(b *testing.B) {
	for _, n := range benchSizes(b) {
		snap := versionedSnapshot(n)
		cfg := cluster.Config{NodeName: "node1"}
		b.Run(fmt.Sprintf("services=%d/full", n), func(b *testing.B) {
			round := 0
			for b.Loop() {
				round++
				moveEndpoint(snap, n/2, round)
				if _, _, err := cluster.Build(snap, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("services=%d/incremental", n), func(b *testing.B) {
			var builder cluster.Builder
			if _, _, err := builder.Build(snap, cfg); err != nil {
				b.Fatal(err)
			}
			round := 0
			for b.Loop() {
				round++
				moveEndpoint(snap, n/2, round)
				if _, _, err := builder.Build(snap, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// versionedSnapshot is synthetic.Snapshot with a UID and resourceVersion
// on every object.
func versionedSnapshot(n int) *cluster.Snapshot {
	s := synthetic.Snapshot(n)
	for i := range s.Services {
		s.Services[i].UID, s.Services[i].ResourceVersion = types.UID("svc-"+strconv.Itoa(i)), "1"
		s.EndpointSlices[i].UID, s.EndpointSlices[i].ResourceVersion = types.UID("eps-"+strconv.Itoa(i)), "1"
	}
	return s
}

// moveEndpoint is synthetic.MoveEndpoint, written as the API server
// writes: with a new resourceVersion.
func moveEndpoint(s *cluster.Snapshot, i, round int) {
	synthetic.MoveEndpoint(s, i, round)
	s.EndpointSlices[i].ResourceVersion = strconv.Itoa(round + 1)
}
