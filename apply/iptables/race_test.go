package iptables_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// raceExec is the foreign writer that wins the race between the read that
// planned an apply and its restore: it runs write just before the first
// restore that it passes on.
type raceExec struct {
	inner applyipt.Execer
	write func() error
	done  bool
}

func (e *raceExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	if strings.HasSuffix(name, "-restore") && !e.done {
		e.done = true
		if err := e.write(); err != nil {
			return nil, err
		}
	}
	return e.inner.Run(ctx, stdin, name, args...)
}

const (
	foreignDispatch = "-d 192.0.2.99/32 -j RETURN"
	foreignBuiltin  = "-s 192.0.2.98/32 -j RETURN"
	foreignService  = "-s 192.0.2.97/32 -j RETURN"
	staleJump       = "-m comment --comment stale -j KUBE-MARK-MASQ"
)

// raceStep is one change that an apply makes while losing the race.
type raceStep struct {
	name        string
	snap        string
	rewritesWeb bool // web's KUBE-SVC chain is rewritten
	reach       map[netip.AddrPort][]string
}

// TestForeignWriterBetweenReadAndRestore makes the race deterministic:
// after an apply has read the kernel and planned, and just before its
// restore runs, another program inserts a rule first in KUBE-SERVICES (a
// dispatch chain the apply edits), first in nat PREROUTING (a built-in
// chain, from which the first step deletes a stale jump) and, in the
// first step, first in the KUBE-SVC chain that the apply rewrites. The
// apply must still delete exactly the rules it planned to delete: every
// rule of every live Service stays, the operator's rule in PREROUTING
// stays, and traffic follows the new state. The rule added to the
// rewritten chain goes with the rest of that chain. The one added to
// KUBE-SERVICES was never read, so the apply leaves it, as it would leave
// one added a moment later; the next apply finds it as drift and deletes
// it, and nothing else, and the one after that has nothing to do.
func TestForeignWriterBetweenReadAndRestore(t *testing.T) {
	filler := manyServices(40)
	gone := svc{name: "gone", ip: "10.96.0.40", port: 80, targetPort: 8080, endpoints: []string{"10.244.0.13"}}
	added := svc{name: "added", ip: "10.96.0.30", port: 80, targetPort: 8080, endpoints: []string{"10.244.1.12"}}
	otherOn81 := other("10.244.0.13")
	otherOn81.port = 81
	// Services without endpoints have REJECT rules in filter's
	// KUBE-SERVICES: one gaining an endpoint loses its rule there.
	empty1 := svc{name: "empty1", ip: "10.96.0.51", port: 80, targetPort: 8080}
	empty2 := svc{name: "empty2", ip: "10.96.0.52", port: 80, targetPort: 8080}
	served1 := empty1
	served1.endpoints = []string{"10.244.0.13"}
	with := func(s ...svc) string { return snapshot(append(append(s, empty2), filler...)...) }
	steps := []raceStep{
		{"a port changed, a Service added, an endpoint removed, one gained", with(web("10.244.0.11"), otherOn81, added, gone, served1), true,
			map[netip.AddrPort][]string{webIP: {"a"}, netip.MustParseAddrPort("10.96.0.20:81"): {"c"}, netip.MustParseAddrPort("10.96.0.30:80"): {"b"}, netip.MustParseAddrPort("10.96.0.51:80"): {"c"}}},
		{"a Service removed", with(web("10.244.0.11"), otherOn81, added, served1), false,
			map[netip.AddrPort][]string{webIP: {"a"}, netip.MustParseAddrPort("10.96.0.30:80"): {"b"}}},
	}
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			n := newNode(t, b)
			withPods(t, n)
			n.apply(t, with(web("10.244.0.11", "10.244.1.12"), other("10.244.0.13"), gone, empty1))
			n.ipt(t, "-t nat -A OUTPUT "+staleJump)
			n.ipt(t, "-t nat -I PREROUTING 1 "+foreignBuiltin)
			for _, s := range steps {
				applyLosingRace(t, n, s)
				checkAfterRace(t, n, s, filler)
			}
			prerouting := readFresh(t, n).Table(ipt.NAT).Chain("PREROUTING").Rules
			if c := countRule(prerouting, foreignBuiltin); c != 1+len(steps) {
				t.Fatalf("the operator's rule %q is in PREROUTING %d times, want %d:\n%s", foreignBuiltin, c, 1+len(steps), prerouting)
			}
			if slices.Contains(readFresh(t, n).Table(ipt.NAT).Chain("OUTPUT").Rules, staleJump) {
				t.Fatalf("the stale jump is still in OUTPUT")
			}
		})
	}
}

// applyLosingRace plans s, and applies it with the foreign rules written
// between the plan's read and the restore.
func applyLosingRace(t *testing.T, n *node, s raceStep) {
	t.Helper()
	race := []string{"-t nat -I KUBE-SERVICES 1 " + foreignDispatch, "-t nat -I PREROUTING 1 " + foreignBuiltin}
	if s.rewritesWeb {
		race = append(race, "-t nat -I "+serviceChain(t, renderIPv4(t, s.snap), "default/web:p")+" 1 "+foreignService)
	}
	plans := n.plan(t, s.snap)
	n.client.Exec = &raceExec{inner: n.rec, write: func() error {
		for _, cmd := range race {
			n.ipt(t, cmd)
		}
		return nil
	}}
	err := n.client.Apply(context.Background(), plans)
	n.client.Exec = n.rec
	if err != nil {
		t.Fatalf("%s: apply after a foreign write: %v", s.name, err)
	}
	t.Logf("%s: the restore that lost the race:\n%s", s.name, n.rec.restores[len(n.rec.restores)-1])
}

// checkAfterRace checks the node after applyLosingRace, then that the
// next apply deletes the foreign rule it now sees, and only that.
func checkAfterRace(t *testing.T, n *node, s raceStep, filler []svc) {
	t.Helper()
	live := readFresh(t, n)
	if got := diff.IPTables(renderIPv4(t, s.snap), live, render.IPTablesOwnership()); !onlyForeignRuleLeft(got, "KUBE-SERVICES", foreignDispatch) {
		var b strings.Builder
		got.WriteText(&b, "live")
		t.Fatalf("%s: after the apply, the tool's rules differ from the desired ones by more than %q in KUBE-SERVICES:\n%s", s.name, foreignDispatch, b.String())
	}
	for _, f := range filler {
		if !slices.ContainsFunc(live.Table(ipt.NAT).Chain("KUBE-SERVICES").Rules, func(r ipt.Rule) bool {
			return strings.HasPrefix(string(r), "-d "+f.ip+"/32 ")
		}) {
			t.Fatalf("%s: Service %s lost its ClusterIP rule", s.name, f.name)
		}
	}
	for dst, want := range s.reach {
		assertReaches(t, n, dst, want...)
	}
	scripts := n.apply(t, s.snap)
	if _, lines := countScript(scripts); lines != 1 || !strings.Contains(string(scripts[0]), "\n-D KUBE-SERVICES "+foreignDispatch+"\n") {
		t.Fatalf("%s: the next apply should delete just the foreign rule in KUBE-SERVICES, by content; it sent:\n%s", s.name, scripts)
	}
	n.assertNoChanges(t, s.snap)
}

func countRule(rules []ipt.Rule, r ipt.Rule) int {
	n := 0
	for _, x := range rules {
		if x == r {
			n++
		}
	}
	return n
}

// serviceChain is the KUBE-SVC chain that KUBE-SERVICES sends a Service
// port's ClusterIP traffic to, by the rule's comment.
func serviceChain(t *testing.T, rs *ipt.Ruleset, port string) string {
	t.Helper()
	for _, r := range rs.Table(ipt.NAT).Chain("KUBE-SERVICES").Rules {
		if strings.Contains(string(r), `"`+port+` cluster IP"`) {
			return r.Target()
		}
	}
	t.Fatalf("no ClusterIP rule for %s", port)
	return ""
}

// readFresh reads the node's rules with a client that has no cache.
func readFresh(t *testing.T, n *node) *ipt.Ruleset {
	t.Helper()
	rs, err := (&applyipt.Client{Exec: nsExec{ns: n.lab.Node().Name()}, Backend: n.client.Backend}).Read(context.Background(), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// onlyForeignRuleLeft reports whether cs replaces one chain, and only to
// remove the one rule foreign from it: every rule the desired state has
// is there already.
func onlyForeignRuleLeft(cs *diff.IPTablesChangeSet, chain string, foreign ipt.Rule) bool {
	if len(cs.Changes) != 1 {
		return false
	}
	c := cs.Changes[0]
	if c.Verb != diff.ReplaceChain || c.Chain != chain {
		return false
	}
	i := slices.Index(c.Old, foreign)
	if i < 0 {
		return false
	}
	rest := slices.Delete(slices.Clone(c.Old), i, i+1)
	want := slices.Clone(c.Rules)
	slices.Sort(rest)
	slices.Sort(want)
	return slices.Equal(rest, want)
}

// TestEditedChainIsCachedInKernelOrder checks that the state an apply
// caches after editing a dispatch chain in place holds its rules in the
// kernel's order, not the render's: the next plan then shows what the
// kernel holds.
func TestEditedChainIsCachedInKernelOrder(t *testing.T) {
	n := newNode(t, applyipt.NFT)
	filler := manyServices(30)
	n.apply(t, snapshot(append([]svc{web("10.244.0.11"), other("10.244.0.13")}, filler...)...))
	added := svc{name: "zz-added", ip: "10.96.0.30", port: 80, targetPort: 8080, endpoints: []string{"10.244.1.12"}}
	scripts := n.apply(t, snapshot(append([]svc{web("10.244.0.11"), added}, filler...)...))
	if !strings.Contains(string(scripts[0]), "\n-I KUBE-SERVICES 1 ") {
		t.Fatalf("the change did not edit KUBE-SERVICES in place:\n%s", scripts)
	}
	dumps := n.rec.dumps
	cached := n.read(t)
	if n.rec.dumps != dumps {
		t.Fatal("the read after the apply dumped the kernel; it should come from the cache")
	}
	if fresh := readFresh(t, n); cached.String() != fresh.String() {
		t.Fatalf("the cache differs from the kernel:\ncache:\n%s\nkernel:\n%s", cached, fresh)
	}
}
