package dataplane

import (
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("100, 1000,10000")
	if err != nil || len(got) != 3 || got[0] != 100 || got[2] != 10000 {
		t.Fatalf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1k", "0", "100,,1000", "70000"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	in := []byte("MemTotal:       24000000 kB\nSlab:             100 kB\nVmallocUsed:       20 kB\nPercpu:             3 kB\n")
	got, err := parseMeminfo(in, kernelMemoryFields)
	if err != nil || got != 123<<10 {
		t.Fatalf("parseMeminfo = %d, %v; want %d", got, err, 123<<10)
	}
	if _, err := parseMeminfo([]byte("Slab: 1 kB\n"), kernelMemoryFields); err == nil {
		t.Error("missing fields: no error")
	}
	if _, err := parseMeminfo([]byte("Slab: 1 MB\nVmallocUsed: 1 kB\nPercpu: 1 kB\n"), kernelMemoryFields); err == nil {
		t.Error("wrong unit: no error")
	}
	if _, err := kernelMemory(); err != nil {
		t.Errorf("this machine's /proc/meminfo: %v", err)
	}
}

func TestMedian(t *testing.T) {
	s := []time.Duration{5, 1, 4, 2, 3}
	if got := median(s); got != 3 {
		t.Errorf("median = %v, want 3", got)
	}
	if s[0] != 5 {
		t.Error("median sorted its argument")
	}
	if got := median(nil); got != 0 {
		t.Errorf("median(nil) = %v", got)
	}
}

// TestFirstAndLast checks that the first and last Services are the two
// ends of the rendered KUBE-SERVICES order, which follows the table's:
// reversing the table swaps them.
func TestFirstAndLast(t *testing.T) {
	table := synthetic.Table(300, 2)
	first, last, err := firstAndLast(table)
	if err != nil {
		t.Fatal(err)
	}
	if first == last {
		t.Fatalf("first and last are both Service %d", first)
	}
	rev := *table
	rev.Ports = append(rev.Ports[:0:0], table.Ports...)
	for i, j := 0, len(rev.Ports)-1; i < j; i, j = i+1, j-1 {
		rev.Ports[i], rev.Ports[j] = rev.Ports[j], rev.Ports[i]
	}
	f2, l2, err := firstAndLast(&rev)
	if err != nil {
		t.Fatal(err)
	}
	if serviceIP(&rev, f2) != serviceIP(table, last) || serviceIP(&rev, l2) != serviceIP(table, first) {
		t.Errorf("reversed table: first %s, last %s; want %s, %s", serviceIP(&rev, f2), serviceIP(&rev, l2), serviceIP(table, last), serviceIP(table, first))
	}
}
