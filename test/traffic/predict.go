package traffic

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// EvaluatorFunc returns, for one family of the snapshot, the mode's
// ruleset loaded into a trace evaluator, and the node as trace sees it; a
// nil evaluator when the mode has nothing in that family.
type EvaluatorFunc func(t *testing.T, snap *cluster.Snapshot, f nodetable.Family) (trace.Evaluator, *trace.Node)

// observed is what a probe's real connections did: the outcome, and for
// answers the backends that answered.
type observed struct {
	outcome  Outcome
	backends []string
}

// predictor holds each family's evaluator, built on first use.
type predictor struct {
	t     *testing.T
	mode  Mode
	snap  *cluster.Snapshot
	pods  []PodSpec
	evals map[nodetable.Family]*familyEval
}

type familyEval struct {
	ev   trace.Evaluator
	node *trace.Node
}

func newPredictor(t *testing.T, mode Mode, snap *cluster.Snapshot, sc Scenario) *predictor {
	return &predictor{t: t, mode: mode, snap: snap, pods: sc.Pods, evals: map[nodetable.Family]*familyEval{}}
}

// compare fails the probe when trace's prediction differs from got: the
// verdict (answered, refused, dropped) and, for answers, the set of pods
// reached (all of them, or with affinity the one that answered), and
// masquerading where the probe checks the source the backend saw.
func (p *predictor) compare(t *testing.T, pr Probe, got observed) {
	t.Helper()
	if p == nil || p.mode.Evaluator == nil {
		return
	}
	r, node := p.trace(t, pr)
	if r == nil {
		return
	}
	want, pods := p.outcome(r, node)
	ok := want == got.outcome
	if ok && got.outcome == Answered {
		if pr.Expect.Sticky {
			ok = r.Affinity.On() && len(got.backends) == 1 && slices.Contains(pods, got.backends[0])
		} else {
			ok = slices.Equal(pods, got.backends)
		}
	}
	// The node's own connections come from its address either way.
	checksMasq := pr.SourceIs.IsValid() && pr.From != FromNode && got.outcome == Answered
	if masq := pr.SourceIs == netlab.NodeIP || pr.SourceIs == netlab.NodeIPv6; ok && checksMasq && masq != r.Masquerade {
		t.Errorf("%s: trace predicts masquerade %v; the backends saw source %s\n%s", describe(pr), r.Masquerade, pr.SourceIs, r.Text())
	}
	if !ok {
		t.Errorf("%s: trace predicts %s %v (affinity %v), real packets: %s %v\n%s",
			describe(pr), want, pods, r.Affinity.On(), got.outcome, got.backends, r.Text())
	}
}

// trace runs the prediction of one probe; it returns the node as the
// mode sees it too.
func (p *predictor) trace(t *testing.T, pr Probe) (*trace.Result, *trace.Node) {
	t.Helper()
	f := nodetable.FamilyOf(pr.Dst.Addr())
	fe := p.evals[f]
	if fe == nil {
		ev, node := p.mode.Evaluator(t, p.snap, f)
		fe = &familyEval{ev: ev, node: node}
		p.evals[f] = fe
	}
	if fe.ev == nil {
		t.Errorf("%s: the mode has no %s ruleset to trace", describe(pr), f)
		return nil, nil
	}
	proto := strings.ToLower(string(pr.Proto))
	pkt := trace.Packet{Src: p.source(pr), Dst: pr.Dst.Addr(), Port: pr.Dst.Port(), Protocol: proto}
	r, err := trace.Run(fe.ev, fe.node, pkt, fe.node.Infer(pkt.Src))
	if err != nil {
		t.Fatalf("%s: trace: %v", describe(pr), err)
	}
	return r, fe.node
}

// source is the address a probe's packets leave with.
func (p *predictor) source(pr Probe) netip.Addr {
	v6 := pr.Dst.Addr().Is6()
	switch pr.From {
	case FromClient:
		return pick(v6, netlab.ClientIP, netlab.ClientIPv6)
	case FromClient2:
		return pick(v6, netlab.Client2IP, netlab.Client2IPv6)
	case FromNode:
		if pr.Dst.Addr().IsLoopback() {
			return pr.Dst.Addr()
		}
		return pick(v6, netlab.NodeIP, netlab.NodeIPv6)
	}
	for _, ps := range p.pods {
		if ps.Name == pr.From {
			for _, ip := range ps.IPs {
				if ip.Is6() == v6 {
					return ip
				}
			}
		}
	}
	return netip.Addr{}
}

func pick(v6 bool, a, b netip.Addr) netip.Addr {
	if v6 {
		return b
	}
	return a
}

// outcome is what the prediction means for real connections in the lab:
// a DNAT is answered by the pods of its endpoints, reject refused, drop
// dropped; a packet no rule changed to one of the node's addresses (ipvs:
// kube-ipvs0's too) is refused by the node, where nothing listens.
func (p *predictor) outcome(r *trace.Result, node *trace.Node) (Outcome, []string) {
	switch r.Verdict {
	case trace.DNAT:
		var pods []string
		for _, ep := range r.Endpoints {
			ap := netip.MustParseAddrPort(ep.Address)
			if name := p.podOf(ap.Addr()); name != "" && !slices.Contains(pods, name) {
				pods = append(pods, name)
			}
		}
		slices.Sort(pods)
		return Answered, pods
	case trace.Reject:
		return Refused, nil
	case trace.Drop:
		return Dropped, nil
	}
	if node.IsLocal(r.Packet.Dst) {
		return Refused, nil
	}
	return Outcome(-1), nil
}

func (p *predictor) podOf(a netip.Addr) string {
	for _, ps := range p.pods {
		if slices.Contains(ps.IPs, a) {
			return ps.Name
		}
	}
	return ""
}
