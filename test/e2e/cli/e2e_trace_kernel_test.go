package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/jsoncontract"
)

// kernelTraceJSON is trace --kernel -o json: the trace and the kernel's
// check.
type kernelTraceJSON struct {
	jsoncontract.Trace
	Kernel *struct {
		Agrees        bool                `json:"agrees"`
		Verdict       string              `json:"verdict"`
		Endpoint      string              `json:"endpoint"`
		Masquerade    bool                `json:"masquerade"`
		Disagreements []string            `json:"disagreements"`
		Path          []jsoncontract.Step `json:"path"`
	} `json:"kernel"`
}

// kernelTrace runs trace --live --kernel in the node and decodes it.
func (n *e2eNode) kernelTrace(t *testing.T, args []string, pkt ...string) kernelTraceJSON {
	t.Helper()
	full := append(append(slices.Clone(args), "--live", "--kernel", "-o", "json"), pkt...)
	r := n.run("trace", full...)
	var got kernelTraceJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Kernel == nil {
		t.Fatalf("trace %s: %v\n%s", strings.Join(pkt, " "), err, r)
	}
	if !got.Kernel.Agrees || r.code != ExitOK {
		t.Fatalf("trace %s: the kernel disagrees (exit %d):\n%s", strings.Join(pkt, " "), r.code, r)
	}
	return got
}

// TestE2ETraceKernel applies the example in a lab node, in nftables mode
// and in iptables-nft mode, and checks a trace of each kind of packet
// against the kernel's own trace of the packet injected into the node:
// from a local pod, from outside, from the node itself; to a ClusterIP, a
// NodePort, a Service without endpoints and an address no Service has.
func TestE2ETraceKernel(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	cases := []struct {
		pkt      []string
		verdict  string
		endpoint []string // one of these, for dnat
	}{
		{[]string{"--from", "10.244.0.5", "--to", "10.96.0.10:80"}, "dnat", []string{"10.244.0.11:8080", "10.244.0.12:8080", "10.244.1.13:8080"}},
		{[]string{"--from", "10.244.0.5", "--to", "10.96.0.53:53", "--protocol", "udp"}, "dnat", nil},
		{[]string{"--from", "198.51.100.7", "--to", "192.168.77.10:30080"}, "dnat", []string{"10.244.0.31:8080", "10.244.1.32:8080"}},
		{[]string{"--from", "192.168.77.10", "--to", "10.96.0.10:80"}, "dnat", []string{"10.244.0.11:8080", "10.244.0.12:8080", "10.244.1.13:8080"}},
		{[]string{"--from", "10.244.0.5", "--to", "10.96.0.40:80"}, "reject", nil},
		{[]string{"--from", "10.244.0.5", "--to", "10.97.9.9:80"}, "accept", nil},
		{[]string{"--from", "203.0.113.9", "--to", "192.0.2.20:443"}, "dnat", []string{"10.244.0.21:8443", "10.244.1.22:8443"}},
		{[]string{"--from", "198.51.100.7", "--to", "192.0.2.20:443"}, "drop", nil},
	}
	for _, mode := range []struct {
		name string
		args []string
	}{{"nftables", nftablesArgs}, {"iptables", exampleArgs}} {
		if mode.name == "iptables" {
			expectBeside(t, n.run("apply", mode.args...), ExitOK, "nftables")
			checkForeignDrop(t, n)
			expect(t, n.run("reset", "--mode=nftables", "--family=ipv4"), ExitOK)
		}
		expect(t, n.run("apply", mode.args...), ExitOK)
		for _, tc := range cases {
			got := n.kernelTrace(t, mode.args, tc.pkt...)
			k := got.Kernel
			if got.Verdict != tc.verdict || k.Verdict != tc.verdict {
				t.Errorf("%s %v: trace %s, kernel %s; want %s", mode.name, tc.pkt, got.Verdict, k.Verdict, tc.verdict)
			}
			if tc.endpoint != nil && !slices.Contains(tc.endpoint, k.Endpoint) {
				t.Errorf("%s %v: the kernel sent it to %q, want one of %v", mode.name, tc.pkt, k.Endpoint, tc.endpoint)
			}
			if len(k.Path) == 0 || len(k.Path) != len(got.Path)+pathAfterBranch(got, k.Endpoint) {
				t.Errorf("%s %v: kernel path %v against trace %v", mode.name, tc.pkt, k.Path, got.Path)
			}
		}
	}
}

// pathAfterBranch is the length of the endpoint's own path in a trace.
func pathAfterBranch(got kernelTraceJSON, endpoint string) int {
	for _, e := range got.Endpoints {
		if e.Address == endpoint {
			return len(e.Path)
		}
	}
	return 0
}

// checkForeignDrop runs the kernel check in iptables mode while the
// nftables mode's table is still in the node, with a rule added by hand
// that drops what the iptables rules send to a NodePort: the check must
// say that the kernel disagrees, name that rule, and exit 1.
func checkForeignDrop(t *testing.T, n *e2eNode) {
	t.Helper()
	n.nft("add", "rule", "ip", "kube-proxy", "filter-prerouting-pre-dnat", "tcp", "dport", "30080", "drop")
	r := n.run("trace", append(slices.Clone(exampleArgs), "--live", "--kernel", "-o", "json", "--from", "198.51.100.7", "--to", "192.168.77.10:30080")...)
	var got kernelTraceJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Kernel == nil {
		t.Fatalf("%v\n%s", err, r)
	}
	if r.code != ExitChanges || got.Kernel.Agrees || len(got.Kernel.Disagreements) == 0 ||
		!strings.Contains(got.Kernel.Disagreements[0], "dropped by ip kube-proxy filter-prerouting-pre-dnat handle") {
		t.Fatalf("a drop by another table's rule: want a disagreement naming it and exit 1, got:\n%s", r)
	}
}
