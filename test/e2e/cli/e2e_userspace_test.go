package cli

import (
	"strings"
	"testing"
)

// userspaceArgs select the userspace mode for the example snapshot.
var userspaceArgs = append([]string{"--mode=userspace"}, exampleArgs...)

// TestE2EUserspacePortalRules plans, applies, repairs and resets the
// userspace mode's portal rules, and checks that the userspace and iptables
// modes leave each other's chains alone: each owns only its own.
func TestE2EUserspacePortalRules(t *testing.T) {
	forEachBackend(t, func(t *testing.T, n *e2eNode) {
		expect(t, n.run("plan", userspaceArgs...), ExitChanges,
			"@@ nat KUBE-PORTALS-CONTAINER: new chain @@", "@@ nat PREROUTING: missing jump @@")
		expect(t, n.run("apply", userspaceArgs...), ExitOK, "Applied (iptables-"+n.backend+"): chains +")
		nat := n.save("nat")
		for _, want := range []string{
			"-A PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER\n",
			"-A PREROUTING -m addrtype --dst-type LOCAL -m comment --comment \"handle service NodePorts; NOTE: this must be the last rule in the chain\" -j KUBE-NODEPORT-CONTAINER\n",
			"-A KUBE-PORTALS-HOST ",
		} {
			if !strings.Contains(nat, want) {
				t.Fatalf("after apply --mode=userspace the nat table lacks %q:\n%s", want, nat)
			}
		}
		// The NodePort jump (with its addrtype match) is recognised as
		// the tool's own, so a second apply neither adds nor removes it.
		before := n.save()
		expect(t, n.run("apply", userspaceArgs...), ExitOK, "chains +0 ~0 -0, rules +0 -0")
		if after := n.save(); after != before {
			t.Fatalf("a second apply changed the kernel:\nbefore:\n%s\nafter:\n%s", before, after)
		}

		// Drift: a portal rule deleted by hand is found and put back.
		n.ipt("-t", "nat", "-D", "KUBE-PORTALS-CONTAINER", "1")
		expect(t, n.run("plan", userspaceArgs...), ExitChanges, "@@ nat KUBE-PORTALS-CONTAINER: changed @@")
		expect(t, n.run("apply", userspaceArgs...), ExitOK, "chains +0 ~1 -0, rules +1 -0")
		expect(t, n.run("plan", userspaceArgs...), ExitOK, "No changes")

		// The iptables mode, applied beside it, leaves the portal chains
		// alone (and says they are there), and resetting it removes only
		// its own chains.
		expectBeside(t, n.run("apply", exampleArgs...), ExitOK, "userspace")
		if !strings.Contains(n.save("nat"), ":KUBE-PORTALS-CONTAINER") {
			t.Fatalf("apply --mode=iptables removed the userspace portal chains:\n%s", n.save("nat"))
		}
		expectBeside(t, n.run("plan", userspaceArgs...), ExitOK, "iptables", "No changes")
		expect(t, n.run("reset", "--mode=iptables"), ExitOK)
		expect(t, n.run("plan", userspaceArgs...), ExitOK, "No changes")

		// reset --mode=userspace removes the portal chains and their jumps.
		expect(t, n.run("reset", "--mode=userspace"), ExitOK, "Reset (iptables-"+n.backend+"): chains +0 ~0 -")
		for _, gone := range []string{"KUBE-PORTALS", "KUBE-NODEPORT-"} {
			if s := n.save(); strings.Contains(s, gone) {
				t.Fatalf("reset --mode=userspace left %s behind:\n%s", gone, s)
			}
		}
	})
}
