package diff

import (
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// nodePortJump is kube-proxy's must-be-last rule of KUBE-SERVICES.
const nodePortJump = `-A KUBE-SERVICES -m addrtype --dst-type LOCAL -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -j KUBE-NODEPORTS` + "\n"

// dispatchRuleset is a nat table whose KUBE-SERVICES holds the given
// per-Service rules and then kube-proxy's must-be-last NodePort jump.
func dispatchRuleset(t *testing.T, services ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n:KUBE-SVC-B - [0:0]\n:KUBE-NODEPORTS - [0:0]\n")
	for _, s := range services {
		b.WriteString("-A KUBE-SERVICES -d " + s + "/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-" + map[string]string{"10.96.0.1": "A", "10.96.0.2": "B"}[s] + "\n")
	}
	b.WriteString(nodePortJump + "COMMIT\n")
	return b.String()
}

// TestDispatchChainOrderIsNotAChange: kube-proxy writes KUBE-SERVICES in
// Go map order, so a node it programmed holds the tool's rules in another
// order; the iptables mode must plan no change for that, but must for a
// moved last rule, and a mode with strict order (ipvs, userspace) must too.
func TestDispatchChainOrderIsNotAChange(t *testing.T) {
	desired := mustParse(t, dispatchRuleset(t, "10.96.0.1", "10.96.0.2"))
	reordered := mustParse(t, dispatchRuleset(t, "10.96.0.2", "10.96.0.1"))
	if cs := IPTables(desired, reordered, render.IPTablesOwnership()); !cs.Empty() {
		t.Errorf("a reordered dispatch chain plans changes: %+v", cs.Changes)
	}
	strict := render.IPTablesOwnership()
	strict.Unordered = nil
	if cs := IPTables(desired, reordered, strict); cs.Empty() {
		t.Error("with strict order, a reordered chain plans no change")
	}

	// The NodePort jump must stay last.
	lastMoved := mustParse(t,
		"*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n:KUBE-SVC-B - [0:0]\n:KUBE-NODEPORTS - [0:0]\n"+
			nodePortJump+
			"-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-A\n"+
			"-A KUBE-SERVICES -d 10.96.0.2/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-B\nCOMMIT\n")
	if cs := IPTables(desired, lastMoved, render.IPTablesOwnership()); cs.Empty() {
		t.Error("moving the must-be-last NodePort jump plans no change")
	}

	// A chain without a must-be-last rule (filter KUBE-SERVICES) may end
	// with any of its rules.
	noTail := strings.ReplaceAll(dispatchRuleset(t, "10.96.0.1", "10.96.0.2"), nodePortJump, "")
	noTailReordered := strings.ReplaceAll(dispatchRuleset(t, "10.96.0.2", "10.96.0.1"), nodePortJump, "")
	if cs := IPTables(mustParse(t, noTail), mustParse(t, noTailReordered), render.IPTablesOwnership()); !cs.Empty() {
		t.Errorf("a reordered chain without a must-be-last rule plans changes: %+v", cs.Changes)
	}

	// A missing or extra rule is still a change.
	missing := mustParse(t, dispatchRuleset(t, "10.96.0.2"))
	if cs := IPTables(desired, missing, render.IPTablesOwnership()); cs.Empty() {
		t.Error("a missing dispatch rule plans no change")
	}
	// KUBE-SVC- chains keep strict order (their probabilities depend on it).
	if own := render.IPTablesOwnership(); own.IsUnordered("nat", "KUBE-SVC-A") || own.IsUnordered("nat", "KUBE-POSTROUTING") {
		t.Error("a per-Service or postrouting chain is treated as unordered")
	}
}
