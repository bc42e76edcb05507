package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestTemplateOutputs: -o takes kubectl's template formats for every
// object the tool prints, and a template sees the object as -o json
// prints it; a broken template is an error before anything runs.
func TestTemplateOutputs(t *testing.T) {
	setStamp(t, buildStamp{"v1.2.3", "abc1234", "2026-01-02T03:04:05Z"})
	trace := []string{"trace", "--example", "--from", "10.244.0.5", "--to", "10.96.0.53:53", "--protocol", "udp"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version", "-o", "jsonpath={.version}"}, "v1.2.3"},
		{[]string{"version", "-o", "go-template={{.kind}} {{.commit}}"}, "Version abc1234"},
		{[]string{"version", "-o", "template={{.kubeProxyCompatibility}}"}, "v1.37"},
		{[]string{"render", "--example", "-o", "jsonpath={.rulesets[*].family}"}, "IPv4 IPv6"},
		{append(trace, "-o", "jsonpath={.verdict} {.endpoints[*].address}"), "dnat 10.244.0.53:5353 10.244.1.53:5353"},
		{append(trace, "-o", "go-template={{range .endpoints}}{{.address}},{{end}}"), "10.244.0.53:5353,10.244.1.53:5353,"},
		{[]string{"trace", "--example", "--service", "kube-system/kube-dns", "-o", "jsonpath={.kind}"}, "ServiceTrace"},
	} {
		out, stderr, code := run(t, "", tc.args...)
		if code != ExitOK || out != tc.want {
			t.Errorf("%v: exit %d, %q (%s); want %q", tc.args, code, out, stderr, tc.want)
		}
	}
	for _, args := range [][]string{
		{"version", "-o", "jsonpath={.version"},
		{"render", "--example", "-o", "go-template={{.kind"},
		{"render", "--example", "-o", "jsonpath="},
	} {
		if _, stderr, code := run(t, "", args...); code != ExitError || !strings.Contains(stderr, "--output ") {
			t.Errorf("%v: exit %d, %q; want exit 2 naming --output", args, code, stderr)
		}
	}
}

// TestPlanTemplateErrors: plan, which also takes markdown, says why a
// template does not parse rather than listing the formats.
func TestPlanTemplateErrors(t *testing.T) {
	_, stderr, code := run(t, "", "plan", "--example", "--against", "-", "-o", "jsonpath={.kind")
	if code != ExitError || !strings.Contains(stderr, "error parsing jsonpath") {
		t.Errorf("exit %d, %q; want 2 and the parse error", code, stderr)
	}
}

// TestNameOutput: -o name prints the Services as kubectl's -o name does:
// render the node's, plan --against those its change touches (the golden
// names.txt); a plan of the kernel, which holds no Services, refuses it.
func TestNameOutput(t *testing.T) {
	out, stderr, code := run(t, "", "render", "--example", "-o", "name")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitOK || len(lines) < 3 || !slices.Contains(lines, "service/kube-dns") {
		t.Fatalf("render -o name: exit %d, %q (%s)", code, out, stderr)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "service/") || strings.Count(l, "/") != 1 {
			t.Errorf("render -o name: line %q is not service/NAME", l)
		}
	}
	for _, args := range [][]string{
		{"plan", "--example", "-o", "name"},
		{"plan", "--example", "--against", "-", "--all-nodes", "-o", "name"},
	} {
		if _, stderr, code := run(t, "", args...); code != ExitError || !strings.Contains(stderr, "needs --against") {
			t.Errorf("%v: exit %d, %q; want exit 2 saying it needs --against", args, code, stderr)
		}
	}
}
