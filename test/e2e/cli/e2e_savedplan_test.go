package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
)

// A saved plan is executed exactly, or not at all: apply FILE writes what
// plan --out showed, and refuses, with exit 2 and the kernel byte for byte
// as it was, a plan whose node moved on, a plan for another node or mode,
// an edited plan, and a plan given with an input of its own.
func TestE2ESavedPlanIPTables(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		testSavedPlan(t, n, exampleArgs, func() string { return n.save() }, func() {
			n.ipt("-t", "nat", "-I", "KUBE-SERVICES", "1", "-d", "10.96.0.99/32", "-j", "RETURN")
		})
	})
}

func TestE2ESavedPlanNFTables(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	list := func() string { return n.nft("list", "ruleset") }
	testSavedPlan(t, n, nftablesArgs, list, func() {
		n.nft("add", "element", "ip", "kube-proxy", "cluster-ips", "{ 10.96.0.99 }")
	})
}

// testSavedPlan runs the saved-plan cases with the mode's args, a way to
// read the whole ruleset, and a hand edit of an owned object.
func testSavedPlan(t *testing.T, n *e2eNode, args []string, kernel func() string, edit func()) {
	first := filepath.Join(n.dir, "first.plan")
	shown := expect(t, n.run("plan", append(args, "--out="+first)...), ExitChanges)
	if !strings.Contains(shown.stdout, "Plan: ") {
		t.Fatalf("plan --out printed no plan:\n%s", shown)
	}
	expect(t, n.run("apply", first), ExitOK, "Applied")
	expect(t, n.run("plan", args...), ExitOK, "No changes")

	// A plan that removes one Service, made, then overtaken by a hand edit.
	docs := strings.Split(string(example.Snapshot), "\n---\n")
	fewer := filepath.Join(n.dir, "fewer.yaml")
	writeFile(t, fewer, keepServices(docs, 3))
	fileArgs := append([]string{"-f", fewer, "--node-name=node1"}, nonExample(args)...)
	second := filepath.Join(n.dir, "second.plan")
	expect(t, n.run("plan", append(fileArgs, "--out="+second)...), ExitChanges)
	refuse := func(why string, want string, argv ...string) {
		t.Helper()
		before := kernel()
		r := n.run("apply", argv...)
		if r.code != ExitError || !strings.Contains(r.stderr, want) {
			t.Fatalf("%s: want exit %d naming %q:\n%s", why, ExitError, want, r)
		}
		if after := kernel(); after != before {
			t.Fatalf("%s: the kernel changed:\nbefore:\n%s\nafter:\n%s", why, before, after)
		}
	}
	refuse("another node", `made with --node-name=node1, not node2`, second, "--node-name=node2")
	refuse("another mode", `made with --mode=`, second, "--mode=userspace")
	refuse("an input of its own", "--filename cannot be used with a saved plan", second, "-f", fewer)
	refuse("another version's plan", "apiVersion", rewritePlan(t, n, second, `"svcproxy.kubectl.io/v1alpha1"`, `"svcproxy.kubectl.io/v9"`))
	refuse("an unknown field", `unknown field "extra"`, rewritePlan(t, n, second, `"kind": "SavedPlan",`, `"kind": "SavedPlan", "extra": 1,`))
	refuse("an edited snapshot", "differ from the plan text that was reviewed",
		rewritePlan(t, n, second, `"port": 53,`, `"port": 54,`))
	edit()
	refuse("a node that moved on", "changed since the plan was made", second, "--max-removal=100")

	// Made again, it applies, and a plan applied is spent: the next apply
	// of the same file finds the node moved on.
	expect(t, n.run("plan", append(fileArgs, "--out="+second)...), ExitChanges)
	expect(t, n.run("apply", second, "--max-removal=100"), ExitOK, "Applied")
	expect(t, n.run("plan", fileArgs...), ExitOK, "No changes")
	refuse("a spent plan", "changed since the plan was made", second, "--max-removal=100")
}

// nonExample returns args without --example.
func nonExample(args []string) []string {
	var out []string
	for _, a := range args {
		if a != "--example" {
			out = append(out, a)
		}
	}
	return out
}

// rewritePlan copies a plan file with old replaced by new, once.
func rewritePlan(t *testing.T, n *e2eNode, path, old, new string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	out := filepath.Join(n.dir, "edited-"+filepath.Base(path))
	writeFile(t, out, strings.Replace(string(data), old, new, 1))
	return out
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
