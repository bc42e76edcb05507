package iptables

import (
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

func TestCounterNames(t *testing.T) {
	rs := &ipt.Ruleset{Family: nodetable.IPv4, Tables: []*ipt.Table{
		{Name: ipt.Filter, Chains: []*ipt.Chain{{Name: "KUBE-FORWARD", Rules: []ipt.Rule{
			"-m conntrack --ctstate INVALID -m nfacct --nfacct-name  ct_state_invalid_dropped_pkts -j DROP",
			"-m comment --comment \"no counter\" -j ACCEPT",
		}}}},
		{Name: ipt.NAT, Chains: []*ipt.Chain{{Name: "KUBE-NODEPORTS", Rules: []ipt.Rule{
			"-d 127.0.0.0/8 -p tcp -m tcp --dport 30080 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-X",
			"-d 127.0.0.0/8 -p tcp -m tcp --dport 30081 -m nfacct --nfacct-name  localhost_nps_accepted_pkts -j KUBE-EXT-Y",
		}}}},
	}}
	got := counterNames([]*Plan{{Desired: rs}})
	want := []string{"ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"}
	if !slices.Equal(got, want) {
		t.Fatalf("counterNames = %v, want %v", got, want)
	}
	var asked []string
	c := &Client{Counters: func(names []string) error { asked = names; return nil }}
	if err := c.ensureCounters([]*Plan{{Desired: rs}}); err != nil || !slices.Equal(asked, want) {
		t.Fatalf("ensureCounters asked for %v (%v), want %v", asked, err, want)
	}
}
