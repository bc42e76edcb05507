package main

import (
	"fmt"
	"math"
	"strings"
)

// column is one metric of the table, or with minus set the difference
// metric - minus of the same run.
type column struct {
	metric, minus, head string
	digits              int // significant digits
}

var columns = []column{
	{"program-s", "", "from empty (s)", 3},
	{"change-s", "", "one change (s)", 3},
	{"first-us", "", "connect, first (µs)", 3},
	{"last-us", "", "connect, last (µs)", 3},
	{"last-us", "first-us", "last − first (µs)", 3},
	{"first-conn/s", "", "conn/s, first", 3},
	{"last-conn/s", "", "conn/s, last", 3},
	{"kmem-MB", "", "kernel memory (MiB)", 3},
}

// value is the column's figure of run r, if it has one.
func (c column) value(r run) (float64, bool) {
	v, ok := r.metrics[c.metric]
	if c.minus == "" || !ok {
		return v, ok
	}
	m, ok := r.metrics[c.minus]
	return v - m, ok
}

// table is the markdown table of one place's runs.
func table(runs []run, where string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n| mode | Services |", where)
	for _, c := range columns {
		b.WriteString(" " + c.head + " |")
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(columns)) + "\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s |", r.mode, thousands(r.services))
		for _, c := range columns {
			v, ok := c.value(r)
			if !ok {
				b.WriteString(" |")
				continue
			}
			b.WriteString(" " + significant(v, c.digits) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString(stallNote(runs))
	return b.String()
}

// stallNote names the runs whose connection rate includes connects that
// waited for a retransmitted SYN ("stalls"), or says there were none.
func stallNote(runs []run) string {
	var stalled []string
	for _, r := range runs {
		if n := r.metrics["stalls"]; n > 0 {
			stalled = append(stalled, fmt.Sprintf("%s at %s: %g", r.mode, thousands(r.services), n))
		}
	}
	if len(stalled) == 0 {
		return "\nNo connection in the conn/s windows waited for a retransmitted SYN.\n"
	}
	return "\nConnections in the conn/s windows that waited for a retransmitted SYN (over 200 ms; each costs a second of the window): " +
		strings.Join(stalled, ", ") + ".\n"
}

// significant prints v with at most digits significant digits, without
// an exponent.
func significant(v float64, digits int) string {
	if v == 0 {
		return "0"
	}
	mag := int(math.Floor(math.Log10(math.Abs(v))))
	decimals := max(digits-1-mag, 0)
	scale := math.Pow(10, float64(digits-1-mag))
	v = math.Round(v*scale) / scale
	return fmt.Sprintf("%.*f", decimals, v)
}

// thousands prints n with commas: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
