// Package review is what a person reads to review a change of the
// cluster's Services before it reaches a node: the nodes of a snapshot
// grouped by identical plans, the Services a change touches, and a plan
// written as Markdown for a pull-request comment. It takes plans as text
// and counts (diff.Summary) and renders or reads no ruleset itself.
package review

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
)

// Group is the nodes whose plans have the very same text, with the plan
// of the first node added, which stands for all of them.
type Group[P any] struct {
	Nodes []string
	Text  string
	Plan  P
}

// Grouper puts node plans into groups. Grouping is exact: two nodes share
// a group only when their plan texts are equal byte for byte. The digest
// only finds the candidates; the texts are then compared whole, so a
// collision cannot merge two different plans. The zero value is ready to
// use; it is not safe for concurrent use.
type Grouper[P any] struct {
	byDigest map[[sha256.Size]byte][]int
	groups   []*Group[P]
}

// Add files node's plan, of text, under its group, and reports whether
// the group is new: plan then stands for it.
func (g *Grouper[P]) Add(node, text string, plan P) bool {
	if g.byDigest == nil {
		g.byDigest = map[[sha256.Size]byte][]int{}
	}
	d := sha256.Sum256([]byte(text))
	for _, i := range g.byDigest[d] {
		if g.groups[i].Text == text {
			g.groups[i].Nodes = append(g.groups[i].Nodes, node)
			return false
		}
	}
	g.byDigest[d] = append(g.byDigest[d], len(g.groups))
	g.groups = append(g.groups, &Group[P]{Nodes: []string{node}, Text: text, Plan: plan})
	return true
}

// Groups returns the groups, each with its nodes sorted, the largest
// group first and groups of one size by their first node, so that the
// order does not depend on the order the nodes were added in.
func (g *Grouper[P]) Groups() []Group[P] {
	out := make([]Group[P], len(g.groups))
	for i, gr := range g.groups {
		out[i] = *gr
		out[i].Nodes = slices.Clone(gr.Nodes)
		slices.Sort(out[i].Nodes)
	}
	slices.SortFunc(out, func(a, b Group[P]) int {
		if len(a.Nodes) != len(b.Nodes) {
			return len(b.Nodes) - len(a.Nodes)
		}
		return strings.Compare(a.Nodes[0], b.Nodes[0])
	})
	return out
}

// NodeList names a group's nodes as a review reads them: "node a, b, c
// (3)", the first maxNames names and how many more after.
func NodeList(nodes []string, maxNames int) string {
	word := "nodes"
	if len(nodes) == 1 {
		word = "node"
	}
	shown := nodes
	if maxNames > 0 && len(nodes) > maxNames {
		shown = nodes[:maxNames]
	}
	s := word + " " + strings.Join(shown, ", ")
	if len(shown) < len(nodes) {
		s += ", and " + strconv.Itoa(len(nodes)-len(shown)) + " more"
	}
	if len(nodes) > 1 {
		s += " (" + strconv.Itoa(len(nodes)) + ")"
	}
	return s
}
