package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// run is one BenchmarkDataplane result: a mode at a size in one place
// (the host or the VM), with its metrics by unit ("program-s", ...).
type run struct {
	where    string
	mode     string
	services int
	metrics  map[string]float64
}

// benchLine matches a result line of BenchmarkDataplane, e.g.
// "BenchmarkDataplane/mode=ipvs/services=100-2   1   8266 ns/op   2.0 change-s ...",
// also indented, as the VM's output reaches the host test's log.
var benchLine = regexp.MustCompile(`^\s*BenchmarkDataplane/mode=([a-z-]+)/services=(\d+)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parse reads go test -bench output and returns its BenchmarkDataplane
// results, labelled where. Other lines are ignored; a result line whose
// metrics do not come in value-unit pairs is an error. A mode and size
// measured twice is an error too: every figure must be from one run.
func parse(r io.Reader, where string) ([]run, error) {
	var runs []run
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		rn := run{where: where, mode: m[1], services: n, metrics: map[string]float64{}}
		f := strings.Fields(m[4])
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("%s line %d: metrics are not value-unit pairs: %q", where, line, sc.Text())
		}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", where, line, err)
			}
			rn.metrics[f[i+1]] = v
		}
		key := fmt.Sprintf("%s/%d", rn.mode, rn.services)
		if seen[key] {
			return nil, fmt.Errorf("%s line %d: %s measured twice", where, line, key)
		}
		seen[key] = true
		runs = append(runs, rn)
	}
	return runs, sc.Err()
}

// modeOrder is the order of the modes in tables and legends.
var modeOrder = []string{"iptables", "nftables", "nftables-compact", "ipvs"}

func modeRank(m string) int {
	if i := slices.Index(modeOrder, m); i >= 0 {
		return i
	}
	return len(modeOrder)
}

// sortRuns orders runs by mode, then size.
func sortRuns(runs []run) {
	slices.SortFunc(runs, func(a, b run) int {
		if c := modeRank(a.mode) - modeRank(b.mode); c != 0 {
			return c
		}
		if c := strings.Compare(a.mode, b.mode); c != 0 {
			return c
		}
		return a.services - b.services
	})
}

// series is one line of a chart: a mode's values by size.
type series struct {
	name   string
	dashed bool
	points [][2]float64 // services, value
}

// seriesOf returns one series per mode of the metric, in modeOrder;
// sizes without the metric are left out.
func seriesOf(runs []run, metric, suffix string, dashed bool) []series {
	var out []series
	index := map[string]int{}
	for _, r := range runs {
		v, ok := r.metrics[metric]
		if !ok {
			continue
		}
		i, ok := index[r.mode]
		if !ok {
			i = len(out)
			index[r.mode] = i
			out = append(out, series{name: r.mode + suffix, dashed: dashed})
		}
		out[i].points = append(out[i].points, [2]float64{float64(r.services), v})
	}
	return out
}
