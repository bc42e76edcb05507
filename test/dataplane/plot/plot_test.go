package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkDataplane/mode=nftables/services=1000-2   	       1	1747663986 ns/op	         0.01981 change-s	     14592 first-conn/s	        18.73 first-us
BenchmarkDataplane/mode=iptables/services=100-2    	       1	2119394340 ns/op	         0.2010 change-s	     15537 first-conn/s	        20.84 first-us	        30.84 last-us	2 stalls
    BenchmarkDataplane/mode=ipvs/services=100         	       1	6325717418 ns/op	         0.5322 change-s
--- SKIP: BenchmarkDataplane/mode=ipvs/services=100
PASS
`

func TestParse(t *testing.T) {
	runs, err := parse(strings.NewReader(sample), "host")
	if err != nil {
		t.Fatal(err)
	}
	sortRuns(runs)
	var got []string
	for _, r := range runs {
		got = append(got, r.mode+"/"+thousands(r.services))
	}
	if want := "iptables/100 nftables/1,000 ipvs/100"; strings.Join(got, " ") != want {
		t.Fatalf("runs %v, want %s", got, want)
	}
	if v := runs[0].metrics["first-us"]; v != 20.84 {
		t.Errorf("iptables first-us = %v, want 20.84", v)
	}
	if v := runs[2].metrics["change-s"]; v != 0.5322 {
		t.Errorf("indented ipvs line: change-s = %v, want 0.5322", v)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"odd pairs": "BenchmarkDataplane/mode=ipvs/services=100 1 5 ns/op 3\n",
		"twice":     "BenchmarkDataplane/mode=ipvs/services=100 1 5 ns/op\nBenchmarkDataplane/mode=ipvs/services=100-2 1 6 ns/op\n",
		"bad value": "BenchmarkDataplane/mode=ipvs/services=100 1 x ns/op\n",
	} {
		if _, err := parse(strings.NewReader(in), "vm"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSignificant(t *testing.T) {
	for v, want := range map[float64]string{0.01981: "0.0198", 14592: "14600", 20.84: "20.8", 2.0: "2.00", -0.1484: "-0.148", 0: "0"} {
		if got := significant(v, 3); got != want {
			t.Errorf("significant(%v) = %q, want %q", v, got, want)
		}
	}
	if got := thousands(10000); got != "10,000" {
		t.Errorf("thousands(10000) = %q", got)
	}
}

// TestChartsAndDoc writes the charts of the sample and checks that each
// is well-formed XML with one polyline per series, and that the document
// keeps what lies outside the markers.
func TestChartsAndDoc(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "host.txt")
	doc := filepath.Join(dir, "docs", "PERF.md")
	os.MkdirAll(filepath.Dir(doc), 0o755)
	os.WriteFile(in, []byte(sample), 0o644)
	os.WriteFile(doc, []byte("before\n"+beginMarker+"\nold\n"+endMarker+"\nafter\n"), 0o644)
	if err := run1(inputs{"host=" + in}, filepath.Join(dir, "docs", "perf"), doc, "on a test machine"); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "docs", "perf", "dataplane-host-connect.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("connect chart is not XML: %v", err)
	}
	// first-us of iptables and nftables, last-us of iptables; ipvs has none.
	if n := strings.Count(string(svg), "<polyline"); n != 3 {
		t.Errorf("connect chart has %d lines, want 3", n)
	}
	out, _ := os.ReadFile(doc)
	s := string(out)
	for _, want := range []string{"before\n", "\nafter\n", "on a test machine", "| iptables | 100 |", "| 10.0 |", "iptables at 100: 2.", "(perf/dataplane-host-kmem.svg)"} {
		if !strings.Contains(s, want) {
			t.Errorf("document lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old") {
		t.Errorf("document kept the old marked part:\n%s", s)
	}
}
