package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/jsoncontract"
)

func TestTraceBadInputExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"source not an IP", []string{"--from", "pod-a", "--to", "10.96.0.10:80"}, `--from "pod-a": not an IP address`},
		{"destination not an IP", []string{"--from", "10.244.0.5", "--to", "web:80"}, `--to "web": not an IP address`},
		{"port out of range", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:70000"}, "out of range 1-65535"},
		{"port zero", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:0"}, "out of range 1-65535"},
		{"no port", []string{"--from", "10.244.0.5", "--to", "10.96.0.10"}, "must be ADDRESS:PORT"},
		{"unbracketed IPv6", []string{"--from", "fd00::1", "--to", "fd00::2:80"}, "needs brackets"},
		{"unknown protocol", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80", "--protocol", "icmp"}, `protocol "icmp": must be tcp, udp or sctp`},
		{"unknown via", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80", "--via", "moon"}, "must be pod, node or external"},
		{"mixed families", []string{"--from", "10.244.0.5", "--to", "[fd00::1]:80"}, "different IP families"},
		{"nothing to trace", nil, "needs --from and --to"},
		{"unknown service", []string{"--service", "default/nope"}, `Service "default/nope"`},
		{"service not NS/NAME", []string{"--service", "nope"}, "NAMESPACE/NAME"},
		{"kernel without live", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80", "--kernel"}, "it needs --live"},
		{"kernel with a service", []string{"--service", "default/web", "--live", "--kernel"}, "not --service"},
		{"kernel in ipvs mode", []string{"--from", "10.244.0.5", "--to", "10.96.0.10:80", "--live", "--kernel", "--mode=ipvs"}, "not ipvs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"trace", "--example"}, tc.args...)
			out, stderr, code := run(t, "", args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
}

func traceExample(t *testing.T, args ...string) jsoncontract.Trace {
	t.Helper()
	out, stderr, code := run(t, "", append([]string{"trace", "--example", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got jsoncontract.Trace
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.APIVersion != outputAPIVersion || got.Kind != kindTrace {
		t.Errorf("apiVersion %q kind %q", got.APIVersion, got.Kind)
	}
	if n := nulls(decodeOutput(t, "json", out), ""); len(n) > 0 {
		t.Errorf("nulls at %v", n)
	}
	return got
}

func TestTraceJSONContract(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			got := traceExample(t, "--mode", mode, "--from", "10.244.0.5", "--to", "10.96.0.30:80")
			if got.Verdict != "dnat" || got.Entry.Via != "pod" || len(got.Endpoints) != 2 {
				t.Fatalf("got %+v", got)
			}
			for _, ep := range got.Endpoints {
				if ep.Probability != 0.5 {
					t.Errorf("%s: probability %v, want 0.5", ep.Address, ep.Probability)
				}
			}
			if got.Affinity.Mode != "ClientIP" || got.Affinity.TimeoutSeconds != 600 {
				t.Errorf("affinity %+v, want ClientIP 600s", got.Affinity)
			}
			if len(got.Path) == 0 || got.Path[0].Table == "" || got.Path[0].Chain == "" || got.Path[0].Rule == "" {
				t.Errorf("path %+v", got.Path)
			}
			drop := traceExample(t, "--mode", mode, "--from", "198.51.100.1", "--to", "192.0.2.20:443")
			if drop.Affinity.Mode != "None" || drop.Verdict != "drop" || drop.Entry.Via != "external" || len(drop.Endpoints) != 0 {
				t.Errorf("outside loadBalancerSourceRanges: %+v", drop)
			}
			node := traceExample(t, "--mode", mode, "--from", "192.168.77.10", "--to", "10.96.0.40:80", "--via", "node")
			if node.Verdict != "reject" || node.Entry.Via != "node" {
				t.Errorf("no endpoints: %+v", node)
			}
		})
	}
}

func TestTraceServiceJSON(t *testing.T) {
	out, stderr, code := run(t, "", "trace", "--example", "--cluster-cidr=10.244.0.0/16", "--service", "shop/frontend", "-o", "yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	v := decodeOutput(t, "yaml", out)
	if v["kind"] != kindServiceTrace || v["service"] != "shop/frontend" {
		t.Errorf("kind %v service %v", v["kind"], v["service"])
	}
	if n := nulls(v, ""); len(n) > 0 {
		t.Errorf("nulls at %v", n)
	}
	cells, _ := v["cells"].([]any)
	drops := 0
	for _, c := range cells {
		if c.(map[string]any)["verdict"] == "drop" {
			drops++
		}
	}
	// The load balancer drops a pod, a remote pod, the node and the client
	// outside loadBalancerSourceRanges.
	if len(cells) == 0 || drops != 4 {
		t.Errorf("%d cells, %d dropped, want 4 dropped:\n%s", len(cells), drops, out)
	}
}

// TestDocsTraceExamples keeps the trace examples of the README and
// docs/TRACE.md the output of the commands they show: the README's quick
// start shows the first, TRACE.md both.
func TestDocsTraceExamples(t *testing.T) {
	examples := [][]string{
		{"--from", "198.51.100.1", "--to", "192.0.2.20:443"},
		{"--service", "shop/frontend"},
	}
	for _, doc := range []struct {
		path     string
		examples [][]string
	}{
		{filepath.Join("..", "..", "README.md"), examples[:1]},
		{filepath.Join("..", "..", "docs", "TRACE.md"), examples},
	} {
		text, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range doc.examples {
			full := append([]string{"trace", "--example", "--cluster-cidr", "10.244.0.0/16"}, args...)
			out, stderr, code := run(t, "", full...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", full, code, stderr)
			}
			cmd := "$ kubectl svcproxy trace --example --cluster-cidr 10.244.0.0/16 " + strings.Join(args, " ") + "\n"
			if !strings.Contains(string(text), cmd+out) {
				t.Errorf("%s does not show %q followed by its output:\n%s", doc.path, cmd, out)
			}
		}
	}
}
