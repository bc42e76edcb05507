package review

import (
	"slices"
	"testing"

	_ "github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden" // accept -update
)

// Nodes share a group exactly when their texts are equal, whatever order
// they come in; the largest group comes first, and each group keeps the
// plan of the node that started it.
func TestGrouperGroupsEqualTextsOnly(t *testing.T) {
	var g Grouper[string]
	adds := []struct{ node, text string }{
		{"c", "diff A\n"}, {"a", "diff A\n"}, {"b", "diff B\n"}, {"d", "diff A\n"},
		{"e", "diff A"}, // no newline: another text
		{"f", ""},
		{"g", "diff B\n"},
	}
	for i, a := range adds {
		isNew := g.Add(a.node, a.text, a.node)
		wantNew := !slices.ContainsFunc(adds[:i], func(b struct{ node, text string }) bool { return b.text == a.text })
		if isNew != wantNew {
			t.Errorf("Add(%s): new group %v, want %v", a.node, isNew, wantNew)
		}
	}
	got := g.Groups()
	want := []Group[string]{
		{Nodes: []string{"a", "c", "d"}, Text: "diff A\n", Plan: "c"},
		{Nodes: []string{"b", "g"}, Text: "diff B\n", Plan: "b"},
		{Nodes: []string{"e"}, Text: "diff A", Plan: "e"},
		{Nodes: []string{"f"}, Text: "", Plan: "f"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d groups %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !slices.Equal(got[i].Nodes, want[i].Nodes) || got[i].Text != want[i].Text || got[i].Plan != want[i].Plan {
			t.Errorf("group %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Two texts with one digest are still two groups: the digest only finds
// candidates. A digest is forced to collide by filing the second text
// under the first one's digest.
func TestGrouperComparesWholeTexts(t *testing.T) {
	var g Grouper[int]
	g.Add("a", "one", 1)
	for d := range g.byDigest {
		g.byDigest[d] = append(g.byDigest[d], 0) // a candidate that is not equal
	}
	g.groups = append(g.groups, &Group[int]{Nodes: []string{"x"}, Text: "two", Plan: 2})
	for d := range g.byDigest {
		g.byDigest[d] = []int{1, 0} // "two" first: a collision
	}
	// "one" must join group 0, not group 1, despite the collision.
	if g.Add("b", "one", 3) {
		t.Error(`Add("b", "one"): started a group`)
	}
	if got := g.groups[1].Nodes; !slices.Equal(got, []string{"x"}) {
		t.Errorf("colliding group: %v, want [x]", got)
	}
	if got := g.groups[0].Nodes; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("group of \"one\": %v, want [a b]", got)
	}
}

func TestNodeList(t *testing.T) {
	for _, c := range []struct {
		nodes []string
		max   int
		want  string
	}{
		{[]string{"a"}, 3, "node a"},
		{[]string{"a", "b", "c"}, 3, "nodes a, b, c (3)"},
		{[]string{"a", "b", "c", "d", "e"}, 2, "nodes a, b, and 3 more (5)"},
		{[]string{"a", "b"}, 0, "nodes a, b (2)"},
	} {
		if got := NodeList(c.nodes, c.max); got != c.want {
			t.Errorf("NodeList(%v, %d) = %q, want %q", c.nodes, c.max, got, c.want)
		}
	}
}
