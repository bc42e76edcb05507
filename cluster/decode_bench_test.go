package cluster_test

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

func benchFiles(b *testing.B, n int) (yamlFile, jsonFile []byte) {
	b.Helper()
	var y, j bytes.Buffer
	s := synthetic.Realistic(n)
	if err := synthetic.WriteKubectlYAML(&y, s); err != nil {
		b.Fatal(err)
	}
	if err := synthetic.WriteKubectlJSON(&j, s); err != nil {
		b.Fatal(err)
	}
	return y.Bytes(), j.Bytes()
}

func benchDecode(b *testing.B, name string, data []byte, n int) {
	b.SetBytes(int64(len(data)))
	before := cpuTime(b)
	for b.Loop() {
		s, err := cluster.Decode(name, data)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Services) != n {
			b.Fatalf("decoded %d Services, want %d", len(s.Services), n)
		}
	}
	// CPU time, the garbage collector's included, says more than wall time
	// on a shared, loaded machine.
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkDecodeYAML and BenchmarkDecodeJSON decode the same snapshot of
// realistic objects (synthetic.Realistic: last-applied-configuration,
// managedFields, status), as `kubectl get -o yaml` and `-o json` print it; the aim is YAML at most 1.5
// times JSON. cpu-ns/op is the one to compare on a shared machine.
func BenchmarkDecodeYAML(b *testing.B) {
	for _, n := range benchSizes(b) {
		y, _ := benchFiles(b, n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchDecode(b, "snapshot.yaml", y, n) })
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	for _, n := range benchSizes(b) {
		_, j := benchFiles(b, n)
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) { benchDecode(b, "snapshot.json", j, n) })
	}
}

// benchSizes is 1k Services, or what SVCPROXY_BENCH_SIZES asks for
// (test/benchsize), e.g. "1000,10000": writing the 10k files alone takes
// minutes.
func benchSizes(b *testing.B) []int { return benchsize.Sizes(b, 1000) }
