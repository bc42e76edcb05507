package cli

import (
	"fmt"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tipvs "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/ipvs"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
	tus "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/userspace"
)

// tracer is one family's evaluator and the node it runs on.
type tracer struct {
	family nodetable.Family
	index  int // of the family in the desired state's rulesets
	table  *nodetable.ServiceTable
	node   *trace.Node
	ev     trace.Evaluator
}

// newTracer builds the evaluator of family f over the rendered ruleset.
func newTracer(d *desired, f nodetable.Family) (*tracer, error) {
	i := slices.Index(d.families, f)
	if i < 0 {
		return nil, fmt.Errorf("the destination is %s, but only %v is rendered (see --family)", f, d.families)
	}
	tr := &tracer{family: f, index: i, table: d.tables.ForFamily(f)}
	var err error
	tr.ev, tr.node, err = newEvaluator(d, i, traceNode(tr.table, d.cfg))
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// newEvaluator loads the mode's rendered ruleset of family index i. It
// returns the node as the mode makes it (ipvs adds kube-ipvs0's addresses).
func newEvaluator(d *desired, i int, n *trace.Node) (trace.Evaluator, *trace.Node, error) {
	var ev trace.Evaluator
	var err error
	switch d.mode {
	case ModeIPTables:
		ev, err = tipt.New(d.iptables[i], n, tipt.Options{})
	case ModeNFTables:
		ev, err = tnft.New(d.nftables[i], n)
	case ModeIPVS:
		ev, n, err = tipvs.New(d.ipvs[i], n)
	case ModeUserspace:
		ev, err = tus.New(d.userspace[i], n)
	default:
		err = fmt.Errorf("trace does not support --mode=%s", d.mode)
	}
	return ev, n, err
}

// traceNode describes the node as render sees it (see trace.NodeOf), with
// the interface name the local-traffic detector expects of pods.
func traceNode(t *nodetable.ServiceTable, cfg render.Config) *trace.Node {
	o := trace.NodeOptions{HostAddresses: cfg.HostAddresses, ClusterCIDRs: cfg.ClusterCIDRs}
	switch cfg.DetectLocalMode {
	case render.LocalModeBridgeInterface:
		o.PodInterface = cfg.BridgeInterface
	case render.LocalModeInterfaceNamePrefix:
		o.PodInterface = cfg.InterfaceNamePrefix + "0"
	}
	return trace.NodeOf(t, o)
}
