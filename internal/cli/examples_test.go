package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// An example line is a comment, then the commands it describes. A comment
// that needs more than this binary says so in parentheses; the others run
// anywhere, with --example, and TestExamplesDoWhatTheySay runs them.
var exampleNeeds = []string{"(needs a cluster)", "(on a node, as root)", "(needs two snapshot files)"}

// exampleChecks says, for each example that runs anywhere, what its
// output must show for the example to do what its comment says.
var exampleChecks = map[string]func(t *testing.T, out string){
	"kubectl svcproxy render --example": func(t *testing.T, out string) {
		mustContain(t, out, "-A KUBE-SERVICES -d 10.96.0.53/32 -p udp -m comment --comment \"kube-system/kube-dns:dns cluster IP\"")
	},
	"kubectl svcproxy render --example --mode=nftables --family=ipv4 -o json": func(t *testing.T, out string) {
		mustContain(t, out, `"kind": "RenderedRuleset"`)
		mustContain(t, out, `10.96.0.53`)
		mustNotContain(t, out, `fd00:`)
	},
	"kubectl svcproxy trace --example --from 10.244.0.5 --to 10.96.0.53:53 --protocol udp": func(t *testing.T, out string) {
		mustContain(t, out, "verdict:    dnat")
		mustContain(t, out, "10.244.0.53:5353")
		mustContain(t, out, "10.244.1.53:5353")
	},
	"kubectl svcproxy trace --example --from 10.244.0.5 --to 10.96.0.53:53 --protocol udp -o json": func(t *testing.T, out string) {
		var tr struct {
			Verdict   string `json:"verdict"`
			Endpoints []struct {
				Address string `json:"address"`
			} `json:"endpoints"`
		}
		if err := json.Unmarshal([]byte(out), &tr); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if tr.Verdict != "dnat" || len(tr.Endpoints) != 2 {
			t.Errorf("verdict %q with %d endpoints, want dnat to kube-dns's two:\n%s", tr.Verdict, len(tr.Endpoints), out)
		}
	},
	"kubectl svcproxy trace --example --service kube-system/kube-dns": func(t *testing.T, out string) {
		mustContain(t, out, "kube-system/kube-dns:dns")
		mustContain(t, out, "ClusterIP 10.96.0.53:53")
	},
	"kubectl svcproxy snapshot --example": func(t *testing.T, out string) {
		mustContain(t, out, "kind: List")
		mustContain(t, out, "name: kube-dns")
	},
	"kubectl svcproxy version": func(t *testing.T, out string) {
		mustContain(t, out, "kubectl-svcproxy ")
	},
	"kubectl svcproxy version -o json": func(t *testing.T, out string) {
		mustContain(t, out, `"kind": "Version"`)
	},
}

// TestExamplesDoWhatTheySay runs every example of every command's help
// that needs no cluster and no node, and checks that it does what its
// comment says. Every other example must say what it needs.
func TestExamplesDoWhatTheySay(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	seen := map[string]bool{}
	for _, cmd := range root.Commands() {
		for _, ex := range parseExamples(t, cmd) {
			if ex.needs {
				continue
			}
			seen[ex.line] = true
			check, ok := exampleChecks[ex.line]
			if !ok {
				t.Errorf("%s: example %q runs anywhere but has no check in exampleChecks", cmd.Name(), ex.line)
				continue
			}
			t.Run(ex.line, func(t *testing.T) {
				out, stderr, code := run(t, "", strings.Fields(strings.TrimPrefix(ex.line, "kubectl svcproxy "))...)
				if code != ExitOK {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				check(t, out)
			})
		}
	}
	for line := range exampleChecks {
		if !seen[line] {
			t.Errorf("exampleChecks has %q, which no command's help shows", line)
		}
	}
}

// helpExample is one command line of a help's examples.
type helpExample struct {
	line  string
	needs bool // its comment says it needs a cluster or a node
}

// parseExamples reads cmd's examples: every command line must follow a
// comment, and one that runs anywhere must use --example and no shell.
func parseExamples(t *testing.T, cmd *cobra.Command) []helpExample {
	var out []helpExample
	comment := ""
	for l := range strings.Lines(cmd.Example) {
		l = strings.TrimSpace(l)
		if c, ok := strings.CutPrefix(l, "# "); ok {
			comment = c
			continue
		}
		if comment == "" {
			t.Errorf("%s: example %q has no comment that says what it does", cmd.Name(), l)
			continue
		}
		ex := helpExample{line: l}
		for _, n := range exampleNeeds {
			ex.needs = ex.needs || strings.Contains(comment, n)
		}
		if !ex.needs && cmd.Name() != "version" && (!strings.Contains(l, "--example") || strings.ContainsAny(l, "|$>")) {
			t.Errorf("%s: example %q needs a cluster, a file or a node, but its comment %q does not say so", cmd.Name(), l, comment)
		}
		out = append(out, ex)
	}
	return out
}

func mustContain(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%.2000s", want, out)
	}
}

func mustNotContain(t *testing.T, out, unwanted string) {
	t.Helper()
	if strings.Contains(out, unwanted) {
		t.Errorf("output holds %q:\n%.2000s", unwanted, out)
	}
}
