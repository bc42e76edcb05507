package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestE2EAutoBackendFollowsTheRules is issue 33's node, through the
// binary, in both orders: after an apply into one backend, 250 rules of
// someone else's in the other one (and kubelet's hint, when that is nft)
// must not make --iptables-backend=auto switch backends and write a
// second copy. With a copy in each backend, plan and apply refuse (exit 2)
// naming both and the reset that removes one; after that reset, auto
// finds the one left.
func TestE2EAutoBackendFollowsTheRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		other := map[string]string{"legacy": "nft", "nft": "legacy"}[n.backend]
		auto := append([]string{"--iptables-backend=auto"}, exampleArgs...)
		expect(t, n.run("apply", exampleArgs...), ExitOK)
		n.foreignRules(other, 250)

		expect(t, n.run("plan", auto...), ExitOK, "No changes: the node's iptables-"+n.backend+" rules")
		expect(t, n.run("apply", auto...), ExitOK, "Applied (iptables-"+n.backend+"): chains +0 ~0 -0, rules +0 -0")
		if strings.Contains(n.saveBackend(other), "KUBE-SERVICES") {
			t.Fatalf("auto wrote a second copy into %s:\n%s", other, n.saveBackend(other))
		}

		// A second copy, written on purpose.
		expect(t, n.run("apply", append([]string{"--iptables-backend=" + other}, exampleArgs...)...), ExitOK)
		for _, sub := range []string{"plan", "apply"} {
			r := expect(t, n.run(sub, auto...), ExitError)
			for _, want := range []string{"both iptables backends hold this mode's rules", "iptables-legacy (IPv4 ", "iptables-nft (IPv4 ",
				"kubectl svcproxy reset --iptables-backend=legacy", "kubectl svcproxy reset --iptables-backend=nft"} {
				if !strings.Contains(r.stderr, want) {
					t.Fatalf("%s with a copy in each backend: stderr lacks %q:\n%s", sub, want, r)
				}
			}
		}
		expect(t, n.run("reset", "--iptables-backend="+other, "--family=ipv4"), ExitOK, "Reset (iptables-"+other+")")
		expect(t, n.run("apply", auto...), ExitOK, "Applied (iptables-"+n.backend+"): chains +0 ~0 -0, rules +0 -0")
	})
}

// foreignRules puts n rules of someone else's into the INPUT chain of
// backend b, and in nft also kubelet's hint chain.
func (n *e2eNode) foreignRules(b string, count int) {
	n.t.Helper()
	var s strings.Builder
	s.WriteString("*filter\n")
	for i := 0; i < count; i++ {
		fmt.Fprintf(&s, "-A INPUT -s 198.51.%d.%d/32 -j ACCEPT\n", 100+i/250, i%250+1)
	}
	s.WriteString("COMMIT\n")
	if b == "nft" {
		s.WriteString("*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n")
	}
	if out, err := n.lab.Node().RunInput(context.Background(), []byte(s.String()), "iptables-"+b+"-restore", "--noflush"); err != nil {
		n.t.Fatalf("%v: %s", err, out)
	}
}

// saveBackend is iptables-save of backend b in the node namespace.
func (n *e2eNode) saveBackend(b string) string {
	n.t.Helper()
	out, err := n.lab.Node().Run(context.Background(), "iptables-"+b+"-save")
	if err != nil {
		n.t.Fatal(err)
	}
	return string(out)
}
