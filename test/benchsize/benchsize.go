// Package benchsize is the one knob of every benchmark's size:
// SVCPROXY_BENCH_SIZES. Unset, a benchmark runs at every size it lists;
// "smallest" runs each at its smallest only, which is what CI does
// (hack/test.sh runs every benchmark once so that none stops working, not
// to measure); a list of Service counts ("1000,30000") runs those.
package benchsize

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Env is the variable that sets the sizes.
const Env = "SVCPROXY_BENCH_SIZES"

// Smallest is Env's value that keeps each benchmark's smallest size.
const Smallest = "smallest"

// Sizes returns the sizes a benchmark runs, from its own list (in
// increasing order) and Env.
func Sizes(tb testing.TB, sizes ...int) []int {
	got, err := parse(os.Getenv(Env), sizes)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func parse(v string, sizes []int) ([]int, error) {
	switch v = strings.TrimSpace(v); v {
	case "":
		return sizes, nil
	case Smallest:
		return []int{slices.Min(sizes)}, nil
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: want %q or Service counts separated by commas", Env, v, Smallest)
		}
		out = append(out, n)
	}
	return out, nil
}
