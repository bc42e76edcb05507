package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// textNodeNames bounds the node names a group's header lists in the text
// and markdown forms; the data forms list them all.
const textNodeNames = 20

// nodePlan is one node's plan --against, as --all-nodes keeps it for the
// group it starts.
type nodePlan struct {
	plan kernelPlan
	// joins: the node is not in OLD, and was planned against nothing.
	joins bool
	// services, for -o markdown, are the Services the plan changes.
	services []review.ServiceChange
}

// nodeNames lists the Nodes of newSnap and oldSnap, sorted: those in
// newSnap (planned), and those only in oldSnap (which the change removes,
// and which have no desired state to plan).
func nodeNames(newSnap, oldSnap *cluster.Snapshot) (planned, removed []string) {
	in := map[string]bool{}
	for _, n := range newSnap.Nodes {
		in[n.Name] = true
		planned = append(planned, n.Name)
	}
	for _, n := range oldSnap.Nodes {
		if !in[n.Name] {
			removed = append(removed, n.Name)
		}
	}
	slices.Sort(planned)
	slices.Sort(removed)
	return slices.Compact(planned), slices.Compact(removed)
}

// runAllNodes is plan --against --all-nodes.
func (o *PlanOptions) runAllNodes(newSnap, oldSnap *cluster.Snapshot) error {
	nodes, removed := nodeNames(newSnap, oldSnap)
	if len(nodes) == 0 {
		return fmt.Errorf("--all-nodes: %s lists no Node: give --node-name instead", o.inputName())
	}
	if len(removed) > 0 {
		o.warnf("%s only in %s, which the change removes: not planned", review.NodeList(removed, textNodeNames), o.againstName())
	}
	st := o.reporter().Start(fmt.Sprintf("planning %d nodes", len(nodes)))
	defer st.End()
	groups, rendered, err := o.planAllNodes(newSnap, oldSnap, nodes)
	if err != nil {
		return err
	}
	st.Done("planned %d nodes, %d of them rendered: %d groups", len(nodes), rendered, len(groups))
	if joins := joiningNodes(groups); len(joins) > 0 {
		o.warnf("%s not in %s: planned against an empty ruleset, as nodes that join", review.NodeList(joins, textNodeNames), o.againstName())
	}
	out, flush := o.colored(o.output, diffClass)
	if err := o.writeGroups(out, groups, len(nodes)); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	for _, g := range groups {
		if !g.Plan.plan.empty() {
			return ErrChanges
		}
	}
	return nil
}

// joiningNodes are the nodes planned against nothing, sorted: a group's
// nodes all are or all are not, since an empty live side shows in the
// plan's text (kube-proxy's fixed chains are created).
func joiningNodes(groups []review.Group[*nodePlan]) []string {
	var out []string
	for _, g := range groups {
		if g.Plan.joins {
			out = append(out, g.Nodes...)
		}
	}
	slices.Sort(out)
	return out
}

// nodePlansReport is the data form of --all-nodes: kind NodePlans.
type nodePlansReport struct {
	typeMeta
	Mode    Mode            `json:"mode"`
	Against string          `json:"against"`
	Groups  []nodePlanGroup `json:"groups"`
}

type nodePlanGroup struct {
	Nodes   []string     `json:"nodes"`
	Summary diff.Summary `json:"summary"`
	Sets    any          `json:"changeSets"`
}

// writeGroups prints the groups in the format of --output.
func (o *PlanOptions) writeGroups(w io.Writer, groups []review.Group[*nodePlan], nodes int) error {
	mode := o.proxy.settings.mode
	switch o.output {
	case "text":
	case "markdown":
		var sections []review.Section
		for _, g := range groups {
			p := g.Plan.plan
			sections = append(sections, review.Section{Title: review.NodeList(g.Nodes, textNodeNames), Summary: p.summary(),
				Empty: p.empty(), Services: g.Plan.services, Diff: g.Text})
		}
		head := planHead{mode: mode, against: o.againstName()}
		return review.Markdown(w, o.markdownHeading(head)+", "+nodesInGroups(nodes, len(groups)), sections, markdownLines)
	default:
		r := nodePlansReport{typeMeta: newTypeMeta(kindNodePlans), Mode: mode, Against: o.againstName()}
		for _, g := range groups {
			r.Groups = append(r.Groups, nodePlanGroup{Nodes: g.Nodes, Summary: g.Plan.plan.summary(), Sets: g.Plan.plan.data()})
		}
		return writeData(w, o.output, &r)
	}
	for _, g := range groups {
		fmt.Fprintf(w, "=== %s\n", review.NodeList(g.Nodes, textNodeNames))
		if g.Plan.plan.empty() {
			fmt.Fprintf(w, "No changes.\n")
			continue
		}
		fmt.Fprintf(w, "%sPlan: %s\n", g.Text, g.Plan.plan.summary())
	}
	_, err := fmt.Fprintf(w, "%s.\n", nodesInGroups(nodes, len(groups)))
	return err
}

// nodesInGroups says "1,000 nodes in 3 groups", in the singular where it
// is one.
func nodesInGroups(nodes, groups int) string {
	plural := func(n int, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	return plural(nodes, "node") + " in " + plural(groups, "group")
}
