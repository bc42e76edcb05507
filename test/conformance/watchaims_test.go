package conformance

import (
	"strings"
	"testing"
)

// TestAims checks the verdicts on the aims: a figure that misses
// is MISSED against a kube-proxy that finished, but not known against a
// capped one, whose first sync and peak RSS are lower bounds.
func TestAims(t *testing.T) {
	kp := watchFigures{runs: 1, first: 100, rss: 500, lat: []float64{0.2}}
	fast := watchFigures{runs: 1, first: 5, rss: 400, lat: []float64{0.05}}
	slow := watchFigures{runs: 1, first: 20, rss: 600, lat: []float64{0.15}}
	capped := kp
	capped.capped, capped.lat = 1, nil
	for _, tc := range []struct {
		name     string
		kp, tool watchFigures
		want     []string
	}{
		{"all met", kp, fast, []string{"20.0× (5.0 s vs 100.0 s): holds", "(0.25 of it): holds", "400 MB vs 500 MB: holds"}},
		{"all missed", kp, slow, []string{"5.0×", "MISSED", "(0.75 of it): MISSED", "600 MB vs 500 MB: MISSED"}},
		{"capped, met", capped, fast, []string{"≥ 20.0×", "holds", "not measured", "400 MB vs ≥ 500 MB: holds"}},
		{"capped, short", capped, slow, []string{"≥ 5.0× (20.0 s vs 100.0 s): not known", "not measured", "600 MB vs ≥ 500 MB: not known"}},
	} {
		lines := aims(tc.kp, tc.tool)
		if len(lines) != 3 {
			t.Fatalf("%s: %d lines, want 3: %q", tc.name, len(lines), lines)
		}
		all := strings.Join(lines, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, all)
			}
		}
		if tc.kp.capped > 0 && strings.Contains(all, "MISSED") {
			t.Errorf("%s: MISSED against a capped kube-proxy:\n%s", tc.name, all)
		}
	}
}

// TestParseEndpoints checks the endpoints-per-Service setting's bounds.
func TestParseEndpoints(t *testing.T) {
	for v, want := range map[string]int{"1": 1, "50": 50, "1000": 1000, "0": 0, "1001": 0, "x": 0, "-5": 0} {
		got, err := parseEndpoints(v)
		if got != want || (err == nil) != (want > 0) {
			t.Errorf("parseEndpoints(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
}
