package conformance

import "fmt"

// The aims of issue 37 for a side-by-side run: the tool's first sync at
// least firstSyncAim times faster than kube-proxy's, its one-endpoint
// change p50 at most p50Aim of kube-proxy's, and its peak RSS no higher.
const (
	firstSyncAim = 10
	p50Aim       = 0.5
)

// aims says, one line each, whether the tool's figures meet the aims
// against kube-proxy's. A capped kube-proxy's first sync and peak RSS are
// lower bounds: an aim met against them is met; one missed is not known.
func aims(kp, tool watchFigures) []string {
	capped := kp.capped > 0
	verdict := func(ok bool) string {
		switch {
		case ok:
			return "holds"
		case capped:
			return "not known (kube-proxy capped: its figure is a lower bound)"
		}
		return "MISSED"
	}
	bound := ""
	if capped {
		bound = "≥ "
	}
	speedup := kp.first / tool.first
	lines := []string{fmt.Sprintf("aim: first sync ≥ %d× faster than kube-proxy's: %s%.1f× (%.1f s vs %.1f s): %s",
		firstSyncAim, bound, speedup, tool.first/tool.runs, kp.first/kp.runs, verdict(speedup >= firstSyncAim))}
	if len(kp.lat) == 0 || len(tool.lat) == 0 {
		lines = append(lines, "aim: one-endpoint change p50 ≤ half of kube-proxy's: not measured (no changes by both)")
	} else {
		kp50, tool50 := percentile(kp.lat, 50), percentile(tool.lat, 50)
		lines = append(lines, fmt.Sprintf("aim: one-endpoint change p50 ≤ half of kube-proxy's: %.0f ms vs %.0f ms (%.2f of it): %s",
			tool50*1000, kp50*1000, tool50/kp50, verdict(tool50 <= p50Aim*kp50)))
	}
	kpRSS, toolRSS := kp.rss/kp.runs, tool.rss/tool.runs
	return append(lines, fmt.Sprintf("aim: peak RSS no higher than kube-proxy's: %.0f MB vs %s%.0f MB: %s",
		toolRSS, bound, kpRSS, verdict(toolRSS <= kpRSS)))
}
