package cli

import (
	"context"
	"strings"
	"testing"
)

// nftablesArgs select the nftables mode for the example snapshot.
var nftablesArgs = append([]string{"--mode=nftables"}, exampleArgs...)

// nft runs nft in the node namespace and returns its output.
func (n *e2eNode) nft(args ...string) string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(n.t.Context(), cmdTimeout)
	defer cancel()
	out, err := n.lab.Node().Run(ctx, "nft", args...)
	if err != nil {
		n.t.Fatalf("nft %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestE2ENFTablesPlanApplyReset drives the nftables mode through the
// binary: plan on an empty node, apply, a second apply that changes
// nothing, a hand edit that plan reports and apply repairs, a dry run, and
// a reset that leaves a foreign table exactly as it was.
func TestE2ENFTablesPlanApplyReset(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	n.nft("add", "table", "ip", "foreign")
	n.nft("add", "chain", "ip", "foreign", "input", "{ type filter hook input priority 0; policy accept; }")
	n.nft("add", "rule", "ip", "foreign", "input", "ip saddr 192.0.2.7 accept")
	foreign := n.nft("list", "table", "ip", "foreign")

	expect(t, n.run("plan", nftablesArgs...), ExitChanges, "+++ desired", "services")
	r := expect(t, n.run("apply", nftablesArgs...), ExitOK, "Applied (nftables): chains +")
	listing := n.nft("list", "table", "ip", "kube-proxy")
	for _, want := range []string{"map service-ips", "chain services", "numgen random mod"} {
		if !strings.Contains(listing, want) {
			t.Fatalf("after apply, nft list table ip kube-proxy lacks %q:\n%s\n%s", want, listing, r)
		}
	}
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "chains +0 ~0 -0, rules +0 -0")
	expect(t, n.run("plan", nftablesArgs...), ExitOK, "No changes")

	// Drift: an element of the service dispatch map deleted by hand.
	var elem string
	for line := range strings.Lines(listing) {
		if strings.Contains(line, "10.96.0.10 . tcp . 80 : goto service-") {
			elem = "10.96.0.10 . tcp . 80"
			break
		}
	}
	if elem == "" {
		t.Fatalf("no service-ips element for 10.96.0.10:80 in:\n%s", listing)
	}
	n.nft("delete", "element", "ip", "kube-proxy", "service-ips", "{ "+elem+" }")
	expect(t, n.run("plan", nftablesArgs...), ExitChanges, elem)
	expect(t, n.run("apply", nftablesArgs...), ExitOK, "elements +1 -0")
	expect(t, n.run("plan", nftablesArgs...), ExitOK, "No changes")

	// --dry-run prints an nft script and changes nothing.
	n.nft("delete", "element", "ip", "kube-proxy", "service-ips", "{ "+elem+" }")
	before := n.nft("list", "ruleset")
	expect(t, n.run("apply", append(nftablesArgs, "--dry-run")...), ExitOK, "add element ip kube-proxy service-ips")
	if after := n.nft("list", "ruleset"); after != before {
		t.Fatalf("apply --dry-run changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// reset removes the kube-proxy table only.
	expect(t, n.run("reset", "--mode=nftables", "--family=ipv4"), ExitOK, "Reset (nftables)")
	if out := n.nft("list", "tables"); strings.Contains(out, "kube-proxy") {
		t.Fatalf("reset left a kube-proxy table:\n%s", out)
	}
	if got := n.nft("list", "table", "ip", "foreign"); got != foreign {
		t.Fatalf("the foreign table changed:\nbefore:\n%s\nafter:\n%s", foreign, got)
	}
}
