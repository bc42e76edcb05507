package traffic_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace/kernel"
)

// kernelTraceSamples bounds the test to about a minute: a probe the node
// forwards or delivers costs a few milliseconds, one the node sends waits
// for its events to stop (300 ms).
const kernelTraceSamples = 80

// TestTraceMatchesKernelTraceOnRandomPackets is the property test against
// the kernel's own trace: random packets (from a pod, from outside, from
// the node) against a large synthetic cluster loaded in a lab node, each
// injected with the trace flag; the rules the kernel's trace events say
// matched, in order, and how the packet ended (dnat to which endpoint,
// masqueraded or not, dropped by which rule, or let through) must be what
// the evaluator predicts over the same ruleset.
func TestTraceMatchesKernelTraceOnRandomPackets(t *testing.T) {
	table, cfg, node, seed := propertyCluster(t)
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			lab := netlab.New(t)
			ev := loadProperty(t, lab, mode, table, cfg, node)
			var nfts []*nft.Ruleset
			var ipts []*ipt.Ruleset
			if mode == "nftables" {
				nfts = []*nft.Ruleset{render.NFTables(table, cfg)}
			} else {
				ipts = []*ipt.Ruleset{render.IPTables(table, cfg)}
			}
			rng := rand.New(rand.NewPCG(seed, uint64(len(mode))))
			sources := []netip.Addr{netlab.ClientIP, netip.MustParseAddr("10.244.0.2"), netlab.NodeIP}
			seen := map[trace.Verdict]int{}
			for i, pkt := range fixedPackets(table) {
				seen[checkKernelTrace(t, -1-i, lab, ev, node, pkt, nfts, ipts)]++
			}
			for i := range kernelTraceSamples {
				pkt := randomPacket(rng, table, sources[rng.IntN(len(sources))])
				seen[checkKernelTrace(t, i, lab, ev, node, pkt, nfts, ipts)]++
			}
			t.Logf("kernel verdicts: %v", seen)
			if seen[trace.DNAT] == 0 || len(seen) < 3 {
				t.Errorf("the samples did not cover DNAT and two other verdicts: %v", seen)
			}
		})
	}
}

// fixedPackets come before the random ones, so that every run covers the
// three verdicts a pod's TCP connection can meet: a ClusterIP with
// endpoints (dnat), one without (reject), an address no rule knows
// (accept).
func fixedPackets(table *nodetable.ServiceTable) []trace.Packet {
	pod := netip.MustParseAddr("10.244.0.2")
	out := []trace.Packet{{Src: pod, Dst: netip.MustParseAddr("192.0.2.250"), Port: 80, Protocol: "tcp"}}
	var withEndpoints, without bool
	for i := range table.Ports {
		sp := &table.Ports[i]
		if sp.Name.Protocol != nodetable.TCP || !sp.ClusterIP.IsValid() || (len(sp.AllEndpoints) > 0 && withEndpoints) || (len(sp.AllEndpoints) == 0 && without) {
			continue
		}
		withEndpoints, without = withEndpoints || len(sp.AllEndpoints) > 0, without || len(sp.AllEndpoints) == 0
		out = append(out, trace.Packet{Src: pod, Dst: sp.ClusterIP, Port: uint16(sp.Port), Protocol: "tcp"})
	}
	return out
}

// checkKernelTrace traces one packet with the evaluator and in the
// kernel, and returns the kernel's verdict.
func checkKernelTrace(t *testing.T, i int, lab *netlab.Lab, ev trace.Evaluator, node *trace.Node, pkt trace.Packet, nfts []*nft.Ruleset, ipts []*ipt.Ruleset) trace.Verdict {
	t.Helper()
	forgetAffinity(t, lab, nfts)
	entry := node.Infer(pkt.Src)
	if entry.Via != trace.ViaNode {
		entry.InInterface = kernel.TunName
	}
	r, err := trace.Run(ev, node, pkt, entry)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := kernel.NewProbe(pkt)
	if err != nil {
		t.Fatal(err)
	}
	var out *kernel.Outcome
	err = lab.Node().Do(func() error {
		ps, err := kernel.NewPositions()
		if err != nil {
			return err
		}
		events, err := kernel.Run(probe, entry.Via)
		if err != nil {
			return err
		}
		out, err = kernel.ReadOutcome(events, probe, kernel.RulesOf(nfts, ipts, ps))
		return err
	})
	if err != nil {
		t.Fatalf("sample %d: %v", i, err)
	}
	if c := kernel.Compare(r, out); !c.Agrees {
		t.Errorf("sample %d, %s %s:%d -> %s:%d via %s: %s\n%s%s", i, pkt.Protocol, pkt.Src, probe.SrcPort, pkt.Dst, pkt.Port,
			entry.Via, strings.Join(c.Disagreements, "; "), r.Text(), c.Text())
	}
	return out.Verdict
}

// forgetAffinity empties the node's ClientIP affinity state: iptables'
// recent lists, or the affinity sets of the nftables rulesets nfts. An
// earlier sample from the same source to the same Service leaves an entry
// there, which the kernel then follows, while the evaluator predicts a
// first connection.
func forgetAffinity(t *testing.T, lab *netlab.Lab, nfts []*nft.Ruleset) {
	t.Helper()
	ctx := context.Background()
	if nfts == nil {
		reset := `for f in /proc/net/xt_recent/*; do if [ -e "$f" ]; then echo / > "$f"; fi; done`
		if _, err := lab.Node().Run(ctx, "sh", "-c", reset); err != nil {
			t.Fatalf("emptying the recent lists: %v", err)
		}
		return
	}
	var script strings.Builder
	for _, rs := range nfts {
		for _, set := range rs.Sets {
			if strings.HasPrefix(set.Name, render.NFTPrefixAffinity) {
				fmt.Fprintf(&script, "flush set %s %s %s\n", rs.Family, rs.Table, set.Name)
			}
		}
	}
	if script.Len() == 0 {
		return
	}
	if _, err := lab.Node().RunInput(ctx, []byte(script.String()), "nft", "-f", "-"); err != nil {
		t.Fatalf("emptying the affinity sets: %v", err)
	}
}
