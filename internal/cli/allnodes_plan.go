package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/panicsite"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// What --all-nodes shares between nodes. In iptables mode, nodes whose
// tables the render reads the same get the same plan, and one of them is
// planned for all (nodeClasses). Most of a planned node's plan is the
// same as the next one's, but kube-proxy's rules are not a sum of
// node-independent parts (local endpoints, the node's addresses and pod
// range enter some Services' rules), so each planned node is still
// built, rendered and diffed whole; what is shared is the work on what
// is the same:
//   - each snapshot is decoded once;
//   - objects are versioned by their content (cluster.VersionByContent),
//     and one cluster.Builder builds a node's OLD, then its NEW: the
//     Services and EndpointSlices the change leaves alone are handed over
//     from OLD's build, and a Service is parsed once per snapshot, not once
//     per node; from one node to the next, so are the Services whose
//     endpoints name neither node;
//   - the renderers keep each port's rules from the render before, and a
//     port equal to one seen before (portInterner) is handed to them as
//     that very value: NEW's render writes only what the change changed,
//     the next node's only the ports it sees differently (in iptables
//     mode, whose memo does not key on the node; render.IPTablesRenderer),
//     and the diff then compares rules that are mostly the same strings;
//   - the nodes are split between the CPUs, each with its own Builder.
// docs/CI-REVIEW.md has the figures.

// nodePlanner plans nodes one after the other.
type nodePlanner struct {
	o        *PlanOptions
	s        renderSettings
	builder  cluster.Builder
	ipt      map[nodetable.Family]*render.IPTablesRenderer
	nft      map[nodetable.Family]*render.NFTablesRenderer
	ports    *portInterner
	checked  checkedChains
	excluded []netip.Prefix
}

func newNodePlanner(o *PlanOptions, excluded []netip.Prefix) *nodePlanner {
	return &nodePlanner{o: o, s: o.proxy.settings, excluded: excluded, ports: newPortInterner(),
		ipt: map[nodetable.Family]*render.IPTablesRenderer{nodetable.IPv4: {}, nodetable.IPv6: {}},
		nft: map[nodetable.Family]*render.NFTablesRenderer{nodetable.IPv4: {}, nodetable.IPv6: {}}}
}

// render builds and renders node's tables from snap; a snapshot without
// the node gives nil.
func (p *nodePlanner) render(snap *cluster.Snapshot) (*desired, error) {
	tables, warnings, err := p.builder.Build(snap, p.s.cluster)
	var missing *cluster.NodeNotFoundError
	if errors.As(err, &missing) && missing.Err == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		p.o.warnOnceLocked(fmt.Sprint(w))
	}
	p.ports.intern(tables)
	return renderTablesWith(&p.s, tables, p.ipt, p.nft), nil
}

// warnOnceLocked is warnOnce for the planners, which run at once.
func (o *PlanOptions) warnOnceLocked(msg string) {
	o.warnMu.Lock()
	defer o.warnMu.Unlock()
	o.warnOnce(msg)
}

// plan plans one node: OLD first, so that NEW reuses what it built.
func (p *nodePlanner) plan(node string, newSnap, oldSnap *cluster.Snapshot) (want, live *desired, plan kernelPlan, err error) {
	p.s.cluster.NodeName = node
	if live, err = p.render(oldSnap); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", p.o.againstName(), err)
	}
	if want, err = p.render(newSnap); err != nil {
		return nil, nil, nil, err
	}
	if want == nil {
		return nil, nil, nil, fmt.Errorf("node %s not found in %s", node, p.o.inputName())
	}
	plan, err = diffDesired(want, live, p.o.againstName(), p.excluded, &p.checked)
	return want, live, plan, err
}

// planAllNodes plans every node and groups them by their plan's text;
// rendered counts the nodes it rendered (nodeClasses).
func (o *PlanOptions) planAllNodes(newSnap, oldSnap *cluster.Snapshot, nodes []string) (groups []review.Group[*nodePlan], rendered int, err error) {
	excluded, err := o.kernel.excludeCIDRs("--ipvs-exclude-cidrs")
	if err != nil {
		return nil, 0, err
	}
	for _, snap := range []*cluster.Snapshot{newSnap, oldSnap} {
		if err := snap.VersionByContent(); err != nil {
			return nil, 0, err
		}
	}
	reps, classOf, err := o.nodeClasses(newSnap, oldSnap, nodes)
	if err != nil {
		return nil, 0, err
	}
	texts, plans, err := o.planEachNode(newSnap, oldSnap, reps, excluded)
	if err != nil {
		return nil, 0, err
	}
	var g review.Grouper[*nodePlan]
	for i, node := range nodes {
		g.Add(node, texts[classOf[i]], plans[classOf[i]])
	}
	groups = g.Groups()
	if o.output == "markdown" {
		for _, gr := range groups {
			want, live, _, err := newNodePlanner(o, excluded).plan(gr.Nodes[0], newSnap, oldSnap)
			if err != nil {
				return nil, 0, err
			}
			gr.Plan.services = o.serviceChanges(want, live)
		}
	}
	return groups, len(reps), nil
}

// planEachNode plans every node on every CPU, each worker a contiguous run
// of nodes (for its planner's reuse between them), and returns each node's
// plan and its text.
func (o *PlanOptions) planEachNode(newSnap, oldSnap *cluster.Snapshot, nodes []string, excluded []netip.Prefix) ([]string, []*nodePlan, error) {
	texts, plans := make([]string, len(nodes)), make([]*nodePlan, len(nodes))
	workers := min(runtime.GOMAXPROCS(0), len(nodes))
	errs, panics := make([]error, workers), make([]any, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// A panic here would end the process with a runtime trace:
			// raise it again on the command's goroutine, whose recover
			// reports it (crash.go), with where it happened.
			defer func() {
				if r := recover(); r != nil {
					panics[w] = fmt.Sprintf("%v%s", r, panicsite.Of())
				}
			}()
			p := newNodePlanner(o, excluded)
			for i := w * len(nodes) / workers; i < (w+1)*len(nodes)/workers && errs[w] == nil; i++ {
				_, live, plan, err := p.plan(nodes[i], newSnap, oldSnap)
				if err == nil {
					texts[i], err = planText(plan)
				}
				plans[i], errs[w] = &nodePlan{plan: plan, joins: live == nil}, err
			}
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return texts, plans, nil
}
