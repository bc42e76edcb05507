package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MetricShape is what a dashboard or a query depends on in one metric
// family, whatever its values: its type, its label names and, for a
// histogram, its bucket boundaries.
type MetricShape struct {
	Type    string
	Labels  []string  // sorted, without le and quantile
	Buckets []float64 // upper bounds, without +Inf
}

func (s MetricShape) String() string {
	out := fmt.Sprintf("%s {%s}", s.Type, strings.Join(s.Labels, ","))
	if len(s.Buckets) > 0 {
		out += fmt.Sprintf(" buckets %v", s.Buckets)
	}
	return out
}

// Equal compares two shapes.
func (s MetricShape) Equal(o MetricShape) bool {
	return s.Type == o.Type && slices.Equal(s.Labels, o.Labels) && slices.Equal(s.Buckets, o.Buckets)
}

// ParseMetricShapes reads a Prometheus text exposition, as both
// processes serve it on /metrics, into the shape of each family, by name.
// A family whose series disagree on their label names or buckets is an
// error: no exporter of the two does that.
func ParseMetricShapes(body []byte) (map[string]MetricShape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := make(map[string]MetricShape, len(families))
	for name, f := range families {
		var shape MetricShape
		for i, m := range f.GetMetric() {
			s := MetricShape{Type: strings.ToLower(f.GetType().String()), Labels: labelNames(m), Buckets: buckets(m)}
			if i > 0 && !s.Equal(shape) {
				return nil, fmt.Errorf("%s: series of two shapes: %s and %s", name, shape, s)
			}
			shape = s
		}
		if len(f.GetMetric()) == 0 {
			shape.Type = strings.ToLower(f.GetType().String())
		}
		out[name] = shape
	}
	return out, nil
}

func labelNames(m *dto.Metric) []string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	slices.Sort(names)
	return names
}

func buckets(m *dto.Metric) []float64 {
	var out []float64
	for _, b := range m.GetHistogram().GetBucket() {
		out = append(out, b.GetUpperBound())
	}
	// The +Inf bucket is implicit in the text format, and the parser
	// keeps it when it is written out.
	if n := len(out); n > 0 && out[n-1] > 1e300 {
		out = out[:n-1]
	}
	return out
}

// MetricAllow is one metric kube-proxy exports that the tool need not:
// Name is the family's name, Modes the modes it applies to (none: all),
// Reason why.
type MetricAllow struct {
	Name   string
	Modes  []Mode
	Reason string
}

// CompareMetricShapes lists each family that kube-proxy exports and the
// tool lacks, or exports in another shape, bar the allowed ones of mode
// m. Families only the tool has are not differences.
func CompareMetricShapes(kubeProxy, tool map[string]MetricShape, m Mode, allow []MetricAllow) []string {
	var out []string
	for name, want := range kubeProxy {
		if allowed(allow, name, m) {
			continue
		}
		got, ok := tool[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: missing (kube-proxy: %s)", name, want))
		case !got.Equal(want):
			out = append(out, fmt.Sprintf("%s: %s, kube-proxy: %s", name, got, want))
		}
	}
	slices.Sort(out)
	return out
}

func allowed(allow []MetricAllow, name string, m Mode) bool {
	for _, a := range allow {
		if a.Name == name && (len(a.Modes) == 0 || slices.Contains(a.Modes, m)) {
			return true
		}
	}
	return false
}

// SeriesValues returns the value of each series of the counter or gauge
// family name in a text exposition, by its labels as name=value pairs
// sorted and joined with commas.
func SeriesValues(body []byte, name string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(labels)
		out[strings.Join(labels, ",")] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return out, nil
}
