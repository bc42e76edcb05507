package conformance

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"
)

// The settings of the watch benchmarks besides their sizes.
const (
	// BenchEndpointsEnv sets the endpoints per Service (SyntheticEndpoints
	// unset): 50 at 5000 Services gives kubernetes#135639's 250k.
	BenchEndpointsEnv = "SVCPROXY_BENCH_ENDPOINTS"
	// BenchSyncCapEnv bounds the wait for the first syncs, as a Go
	// duration ("45m"); DefaultSyncCap unset.
	BenchSyncCapEnv = "SVCPROXY_BENCH_SYNC_CAP"
	// DefaultSyncCap is above the 13 min 15 s that kube-proxy took for
	// kubernetes#135639's 5,006 Services with 250,011 endpoints.
	DefaultSyncCap = 20 * time.Minute
)

// WatchBenchSizes are the sizes of the watch benchmarks: 100 Services,
// or what SVCPROXY_BENCH_SIZES asks for (test/benchsize), e.g.
// "5000,30000".
func WatchBenchSizes(b testing.TB) []int { return benchsize.Sizes(b, 100) }

// WatchBenchEndpoints is the number of endpoints per synthetic Service:
// BenchEndpointsEnv, or SyntheticEndpoints. One EndpointSlice holds them
// all, so the API's limit of 1000 endpoints a slice is this one's too.
func WatchBenchEndpoints(tb testing.TB) int {
	v := os.Getenv(BenchEndpointsEnv)
	if v == "" {
		return SyntheticEndpoints
	}
	n, err := parseEndpoints(v)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func parseEndpoints(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, fmt.Errorf("%s=%q: want endpoints per Service from 1 to 1000 (one EndpointSlice's limit)", BenchEndpointsEnv, v)
	}
	return n, nil
}

// WatchSyncCap is how long a watch benchmark waits for the first syncs:
// BenchSyncCapEnv, or DefaultSyncCap.
func WatchSyncCap(tb testing.TB) time.Duration {
	v := os.Getenv(BenchSyncCapEnv)
	if v == "" {
		return DefaultSyncCap
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration such as 45m", BenchSyncCapEnv, v)
	}
	return d
}
