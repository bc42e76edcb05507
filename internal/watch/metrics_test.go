package watch

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// gathered returns the sum of the samples of the metric name whose labels
// include labelPairs (name, value, ...), as the registry exposes them.
func gathered(t *testing.T, m *metrics, name string, labelPairs ...string) float64 {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if hasLabels(s, labelPairs) {
				sum += sampleValue(s)
			}
		}
	}
	return sum
}

func hasLabels(s *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sampleValue is a counter's or gauge's value, or a histogram's count.
func sampleValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	}
	return 0
}
