package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nfacct"
)

// nfacctCounter reports one nfacct counter's packets on each scrape, as
// kube-proxy's nfacctMetricCollector does: a counter the kernel cannot
// read (not yet created, no nfacct) is left out of that scrape.
type nfacctCounter struct {
	desc    *prometheus.Desc
	counter string
	packets func(name string) (uint64, error)
}

func (n *nfacctCounter) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

func (n *nfacctCounter) Collect(ch chan<- prometheus.Metric) {
	v, err := n.packets(n.counter)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(n.desc, prometheus.CounterValue, float64(v))
}

// nfacctCollectors are iptables mode's two nfacct metrics. kube-proxy
// registers them whenever it can open a netlink socket, which is always
// on Linux; a kernel without nfacct gives no samples.
func nfacctCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		&nfacctCounter{prometheus.NewDesc("kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
			"packets dropped by iptables to work around conntrack problems", nil, nil),
			nfacct.CTStateInvalidDropped, nfacct.Packets},
		&nfacctCounter{prometheus.NewDesc("kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
			"Number of packets accepted on nodeports of loopback interface", nil, nil),
			nfacct.LocalhostNodePortsAccepted, nfacct.Packets},
	}
}
