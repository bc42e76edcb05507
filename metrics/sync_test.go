package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// NoLocalEndpoints counts as kube-proxy does: a port with endpoints
// somewhere but none here, per Local policy; not a port with none at all,
// nor one with a local endpoint.
func TestNoLocalEndpoints(t *testing.T) {
	local := []nodetable.Endpoint{{}}
	a, b := nodetable.ServicePortName{Namespace: "ns", Name: "a", Port: "p"}, nodetable.ServicePortName{Namespace: "ns", Name: "b", Port: "p"}
	a2 := a
	a2.Port = "q"
	table := &nodetable.ServiceTable{Ports: []nodetable.ServicePort{
		{Name: a, InternalPolicyLocal: true, HasEndpoints: true},
		{Name: a2, InternalPolicyLocal: true, ExternalPolicyLocal: true, HasEndpoints: true},
		{Name: b, ExternalPolicyLocal: true, HasEndpoints: true},
		{Name: b, ExternalPolicyLocal: true, HasEndpoints: false},
		{Name: b, InternalPolicyLocal: true, ExternalPolicyLocal: true, HasEndpoints: true, LocalEndpoints: local},
		{Name: b, HasEndpoints: true},
	}}
	if in, ex := NoLocalEndpoints(table, false); in != 2 || ex != 2 {
		t.Errorf("ports: internal %d, external %d; want 2, 2", in, ex)
	}
	// ipvs mode: Service a counts once for its two ports.
	if in, ex := NoLocalEndpoints(table, true); in != 1 || ex != 2 {
		t.Errorf("Services: internal %d, external %d; want 1, 2", in, ex)
	}
}

// A sync's duration goes to every family, and to the full or the
// partial histogram; its results to the family they were found in.
func TestObserveSync(t *testing.T) {
	p := NewProxy()
	reg := prometheus.NewRegistry()
	p.Register(reg, ModeIPTables)
	p.ObserveDuration([]nodetable.Family{nodetable.IPv4, nodetable.IPv6}, time.Second, true)
	p.ObserveDuration([]nodetable.Family{nodetable.IPv4, nodetable.IPv6}, time.Second, false)
	p.ObserveDuration([]nodetable.Family{nodetable.IPv4, nodetable.IPv6}, time.Second, false)
	p.ObserveSynced([]FamilyStats{
		{Family: nodetable.IPv4, NoLocalInternal: 1, NoLocalExternal: 2,
			IPTablesRules: map[string]int{"nat": 30, "filter": 4}, IPTablesWritten: map[string]int{"nat": 7, "filter": 0},
			Conntrack: &ConntrackRun{Took: time.Millisecond, Deleted: 3}},
		{Family: nodetable.IPv6},
	})
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{value(p.NoLocalEndpoints.WithLabelValues("external", "IPv4")), 2, "no local external IPv4"},
		{value(p.NoLocalEndpoints.WithLabelValues("internal", "IPv6")), 0, "no local internal IPv6"},
		{value(p.IPTablesRules.WithLabelValues("nat", "IPv4")), 30, "nat rules IPv4"},
		{value(p.IPTablesRulesLast.WithLabelValues("nat", "IPv4")), 7, "nat rules written IPv4"},
		{value(p.ConntrackDeleted.WithLabelValues("IPv4")), 3, "conntrack entries deleted IPv4"},
		{float64(series(p.ConntrackReconcileDuration)), 1, "conntrack cleanups (IPv6 had none)"},
		{float64(series(p.SyncDuration)), 2, "sync duration series"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	count := func(h *prometheus.HistogramVec, f string) uint64 {
		var m dto.Metric
		h.WithLabelValues(f).(prometheus.Histogram).Write(&m)
		return m.GetHistogram().GetSampleCount()
	}
	if full, partial, all := count(p.SyncFullDuration, "IPv6"), count(p.SyncPartialDuration, "IPv6"), count(p.SyncDuration, "IPv6"); full != 1 || partial != 2 || all != 3 {
		t.Errorf("IPv6 syncs: %d full, %d partial, %d in all; want 1, 2, 3", full, partial, all)
	}
}

// value is a counter's or a gauge's value.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	m.Write(&d)
	return d.GetCounter().GetValue() + d.GetGauge().GetValue()
}

// series counts the series a collector has.
func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for range ch {
		n++
	}
	return n
}
