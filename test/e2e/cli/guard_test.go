package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
)

// An empty, truncated or wrong input never wipes a node: apply refuses it
// with exit 2 and the kernel stays byte for byte as it was. --force, or a
// higher --max-removal, lets a deliberate change through.
func TestE2EGuardRails(t *testing.T) {
	n := newE2ENode(t, "nft")
	expect(t, n.run("apply", exampleArgs...), ExitOK)
	docs := strings.Split(string(example.Snapshot), "\n---\n")
	write := func(name, text string) string {
		p := filepath.Join(n.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oneService := keepServices(docs, 1)
	flags := []string{"--cluster-cidr=10.244.0.0/16", "--family=ipv4"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"empty file", []string{"-f", write("empty.yaml", ""), "--node-name=node1"}, "holds no Services"},
		{"empty list", []string{"-f", write("list.yaml", "apiVersion: v1\nkind: List\nitems: []\n"), "--node-name=node1"}, "holds no Services"},
		{"truncated before the Services", []string{"-f", write("cut.yaml", strings.Join(docs[:2], "\n---\n")), "--node-name=node1"}, "holds no Services"},
		{"truncated after one Service", []string{"-f", write("one.yaml", oneService), "--node-name=node1"}, "--max-removal=50%"},
		{"another cluster's snapshot", []string{"-f", write("other.yaml", strings.ReplaceAll(string(example.Snapshot), "node1", "worker-7")), "--node-name=node1"}, `no Node "node1"`},
		{"wrong node name", []string{"--example", "--node-name=node2"}, "node2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := n.save()
			r := n.run("apply", append(tc.args, flags...)...)
			if r.code != ExitError || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("want exit %d naming %q:\n%s", ExitError, tc.want, r)
			}
			if after := n.save(); after != before {
				t.Fatalf("the kernel changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	one := filepath.Join(n.dir, "one.yaml")
	expect(t, n.run("apply", append([]string{"-f", one, "--node-name=node1", "--max-removal=100"}, flags...)...), ExitOK)
	expect(t, n.run("apply", exampleArgs...), ExitOK)
	expect(t, n.run("apply", append([]string{"-f", one, "--node-name=node1", "--force"}, flags...)...), ExitOK)
	expect(t, n.run("plan", append([]string{"-f", one, "--node-name=node1"}, flags...)...), ExitOK, "No changes")
}

// keepServices returns the documents of a snapshot with only its first n
// Services (and every other object).
func keepServices(docs []string, n int) string {
	var out []string
	for _, d := range docs {
		if strings.Contains(d, "\nkind: Service\n") {
			if n == 0 {
				continue
			}
			n--
		}
		out = append(out, d)
	}
	return strings.Join(out, "\n---\n")
}
