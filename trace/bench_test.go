package trace_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// BenchmarkTrace is one trace on a loaded ruleset of 10k Services (and
// 1k; 10 endpoints each, with VariedTable's affinity, external IPs, source
// ranges and empty Services): the aim is under 50 ms at 10k. The packet goes to the
// last Service, so dispatch chains are walked to their end.
func BenchmarkTrace(b *testing.B) {
	for _, services := range benchsize.Sizes(b, 1000, 10000) {
		for _, mode := range goldenModes {
			b.Run(fmt.Sprintf("%s/services=%d", mode, services), func(b *testing.B) {
				ev, n, table := loaded(b, mode, services)
				sp := &table.Ports[len(table.Ports)-1]
				p := trace.Packet{Src: netip.MustParseAddr("10.128.200.1"), Dst: sp.ClusterIP, Port: uint16(sp.Port), Protocol: sp.Name.Protocol.Lower()}
				entry := n.Infer(p.Src)
				for b.Loop() {
					r, err := trace.Run(ev, n, p, entry)
					if err != nil {
						b.Fatal(err)
					}
					if r.Verdict != trace.DNAT {
						b.Fatalf("%s: verdict %s, want dnat", mode, r.Verdict)
					}
				}
			})
		}
	}
}

// BenchmarkServiceView is the service view of one Service with every
// kind of entry point (a NodePort, an external IP, a load balancer with
// source ranges: the last one of the table, see loaded) on a loaded
// ruleset of 10k Services (and 1k): the aim is under 200 ms.
func BenchmarkServiceView(b *testing.B) {
	for _, services := range benchsize.Sizes(b, 1000, 10000) {
		for _, mode := range goldenModes {
			b.Run(fmt.Sprintf("%s/services=%d", mode, services), func(b *testing.B) {
				ev, n, table := loaded(b, mode, services)
				sp := &table.Ports[len(table.Ports)-1]
				cells := 0
				for b.Loop() {
					c, err := trace.ServiceView(ev, n, sp)
					if err != nil {
						b.Fatal(err)
					}
					cells = len(c)
				}
				b.ReportMetric(float64(cells), "cells")
			})
		}
	}
}

func loaded(b *testing.B, mode string, services int) (trace.Evaluator, *trace.Node, *nodetable.ServiceTable) {
	b.Helper()
	table := synthetic.VariedTable(services, 10)
	last := &table.Ports[len(table.Ports)-1]
	last.NodePort = 32767
	last.ExternalIPs = []netip.Addr{netip.MustParseAddr("192.0.2.250")}
	last.LoadBalancerVIPs = []netip.Addr{netip.MustParseAddr("198.51.100.250")}
	last.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	n := trace.NodeOf(table, trace.NodeOptions{ClusterCIDRs: cfg.ClusterCIDRs})
	ev, n := evaluator(b, mode, table, cfg, n)
	if len(table.Ports) != services {
		b.Fatalf("%d ports, want %d", len(table.Ports), services)
	}
	return ev, n, table
}
