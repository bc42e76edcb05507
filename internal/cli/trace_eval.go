package cli

import (
	"fmt"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	tipt "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/iptables"
	tnft "github.com/kubectl-svcproxy/kubectl-svcproxy/trace/nftables"
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
	tr.node = traceNode(tr.table, d.cfg)
	ev, err := newEvaluator(d, i, tr.node)
	if err != nil {
		return nil, err
	}
	tr.ev = ev
	return tr, nil
}

func newEvaluator(d *desired, i int, n *trace.Node) (trace.Evaluator, error) {
	switch d.mode {
	case ModeIPTables:
		return tipt.New(d.iptables[i], n, tipt.Options{})
	case ModeNFTables:
		return tnft.New(d.nftables[i], n)
	}
	return nil, fmt.Errorf("trace does not support --mode=%s", d.mode)
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
