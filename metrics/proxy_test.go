package metrics

import (
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// recorder is a Registerer that keeps the names of what is registered.
type recorder struct{ names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		r.names = append(r.names, fqName.FindStringSubmatch(d.String())[1])
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// TestRegisterPerMode registers, per mode, exactly the families kube-proxy
// v1.37.2's RegisterMetrics (pkg/proxy/metrics/metrics.go) registers: the
// ipvs mode is only run in a VM, so this is its check; iptables and
// nftables are also compared live with kube-proxy in test/conformance.
// The nftables localhost NodePort families are behind an alpha gate,
// off by default, and not registered.
func TestRegisterPerMode(t *testing.T) {
	common := []string{"sync_proxy_rules_duration_seconds", "sync_proxy_rules_last_queued_timestamp_seconds",
		"sync_proxy_rules_last_timestamp_seconds", "sync_proxy_rules_endpoint_changes_pending",
		"sync_proxy_rules_endpoint_changes_total", "sync_proxy_rules_service_changes_pending",
		"sync_proxy_rules_service_changes_total", "proxy_healthz_total", "proxy_livez_total",
		"network_programming_duration_seconds", "sync_proxy_rules_no_local_endpoints_total"}
	conntrack := []string{"conntrack_reconciler_sync_duration_seconds", "conntrack_reconciler_deleted_entries_total"}
	fullPartial := []string{"sync_full_proxy_rules_duration_seconds", "sync_partial_proxy_rules_duration_seconds"}
	own := map[string][]string{
		ModeIPTables: append(append([]string{"iptables_ct_state_invalid_dropped_packets_total",
			"iptables_localhost_nodeports_accepted_packets_total", "sync_proxy_rules_iptables_restore_failures_total",
			"sync_proxy_rules_iptables_partial_restore_failures_total", "sync_proxy_rules_iptables_total",
			"sync_proxy_rules_iptables_last"}, fullPartial...), conntrack...),
		ModeIPVS: append([]string{"sync_proxy_rules_iptables_restore_failures_total"}, conntrack...),
		ModeNFTables: append(append([]string{"sync_proxy_rules_nftables_sync_failures_total",
			"sync_proxy_rules_nftables_cleanup_failures_total"}, fullPartial...), conntrack...),
	}
	for mode, extra := range own {
		var want []string
		for _, n := range append(slices.Clone(common), extra...) {
			want = append(want, "kubeproxy_"+n)
		}
		slices.Sort(want)
		r := &recorder{}
		NewProxy().Register(r, mode)
		slices.Sort(r.names)
		if !slices.Equal(r.names, want) {
			t.Errorf("%s registers\n  %v\nwant\n  %v", mode, r.names, want)
		}
	}
}
