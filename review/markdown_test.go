package review

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func TestMarkdown(t *testing.T) {
	var diffText strings.Builder
	for i := range 5 {
		diffText.WriteString("+-A KUBE-SERVICES rule " + string(rune('a'+i)) + "\n")
	}
	sections := []Section{
		{Title: "nodes a, b (2)", Summary: diff.Summary{RulesAdded: 5}, Diff: diffText.String(),
			Services: []ServiceChange{{Service: "default/web", Change: Changed, Summary: diff.Summary{RulesAdded: 5, ElementsRemoved: 1}}}},
		{Title: "node c", Empty: true},
	}
	var out strings.Builder
	if err := Markdown(&out, "plan", sections, 3); err != nil {
		t.Fatal(err)
	}
	want := "### plan\n" +
		"\n**nodes a, b (2)**: chains +0 ~0 -0, rules +5 -0\n" +
		"\n| Service | change | its rules |\n|---|---|---|\n" +
		"| `default/web` | changed | rules +5 -0, elements +0 -1 |\n" +
		"\n```diff\n+-A KUBE-SERVICES rule a\n+-A KUBE-SERVICES rule b\n+-A KUBE-SERVICES rule c\n```\n" +
		"\n2 more lines of the diff were left out (5 in all).\n" +
		"\n**node c**: no changes.\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// A diff holding backticks cannot close its own block.
func TestMarkdownFenceOutlastsTheText(t *testing.T) {
	var out strings.Builder
	s := Section{Title: "node a", Diff: "+rule with ``` and ````\n"}
	if err := Markdown(&out, "plan", []Section{s}, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\n`````diff\n+rule with ``` and ````\n`````\n") {
		t.Errorf("fence not longer than the text's backticks:\n%s", out.String())
	}
}

func TestCounts(t *testing.T) {
	if got := Counts(diff.Summary{}); got != "none" {
		t.Errorf("empty: %q", got)
	}
	s := diff.Summary{ServicesAdded: 1, DestinationsAdded: 2, DestinationsChanged: 1, AddressesAdded: 1}
	if got, want := Counts(s), "virtual servers +1 -0, real servers +2 -0, addresses +1 -0, 1 changed in place"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func port(ns, name, portName string, eps ...string) nodetable.ServicePort {
	p := nodetable.ServicePort{Name: nodetable.ServicePortName{Namespace: ns, Name: name, Port: portName, Protocol: nodetable.TCP}}
	for _, e := range eps {
		p.AllEndpoints = append(p.AllEndpoints, nodetable.Endpoint{IP: mustAddr(e), Port: 8080})
	}
	return p
}

// A Service is added, removed or changed by its ports, in any family;
// one whose ports are equal is not listed.
func TestChangedServices(t *testing.T) {
	oldT := &nodetable.ServiceTable{Family: nodetable.IPv4, Ports: []nodetable.ServicePort{
		port("a", "same", "http", "10.0.0.1"), port("a", "gone", "http"), port("b", "moved", "http", "10.0.0.2"),
		port("b", "twoports", "http"), port("b", "twoports", "https")}}
	newT := &nodetable.ServiceTable{Family: nodetable.IPv4, Ports: []nodetable.ServicePort{
		port("a", "same", "http", "10.0.0.1"), port("b", "moved", "http", "10.0.0.3"), port("b", "twoports", "http"),
		port("c", "new", "")}}
	got := ChangedServices([]*nodetable.ServiceTable{oldT}, []*nodetable.ServiceTable{newT})
	want := []ServiceChange{{Service: "a/gone", Change: Removed}, {Service: "b/moved", Change: Changed},
		{Service: "b/twoports", Change: Changed}, {Service: "c/new", Change: Added}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	only := Only(oldT, "b/twoports")
	if len(only.Ports) != 2 || only.Ports[0].Name.Name != "twoports" || len(oldT.Ports) != 5 {
		t.Errorf("Only: %+v (original now %d ports)", only.Ports, len(oldT.Ports))
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
