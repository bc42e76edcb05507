package nftables_test

import (
	"context"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// TestApplyGoldenCasesOneAfterAnother applies the render of every golden
// case, one after the other, into one namespace: each apply turns the
// previous case's tables into the next one's (sets, chains and elements
// come and go), a second plan finds nothing to do, and nft lists exactly
// the render.
func TestApplyGoldenCasesOneAfterAnother(t *testing.T) {
	n := newNode(t)
	for _, gc := range goldenCases(t) {
		n.apply(t, gc.tables...)
		t.Run(gc.name, func(t *testing.T) { n.assertApplied(t, gc.tables...) })
	}
	// And back to the first, from the last.
	first := goldenCases(t)[0]
	n.apply(t, first.tables...)
	n.assertApplied(t, first.tables...)
}

// handleOf returns the handle of the rule of chain that contains text.
func handleOf(t *testing.T, n *node, family, table, chain, text string) string {
	t.Helper()
	out := n.nft(t, "", "-a", "list", "chain", family, table, chain)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, text) {
			if m := regexp.MustCompile(`# handle (\d+)`).FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no rule with %q in chain %s:\n%s", text, chain, out)
	return ""
}

// TestDriftIsFoundAndRepaired changes the applied table with nft behind
// the tool's back, and checks that plan reports exactly that change and
// apply puts the table back, while traffic keeps flowing.
func TestDriftIsFoundAndRepaired(t *testing.T) {
	n := newNode(t)
	for name, ip := range map[string]string{"a": "10.244.0.11", "b": "10.244.0.12"} {
		if err := n.lab.AddPod(name, netip.MustParseAddr(ip)).ServeTCP(8080); err != nil {
			t.Fatal(err)
		}
	}
	desired := labRender("10.244.0.11", "10.244.0.12")
	n.apply(t, desired)
	assertReaches(t, n, "a", "b")
	svcChain := desired.Set("service-ips").Elements[0].Value[len("goto "):]
	drifts := []struct {
		name string
		nft  func() []string // nft commands
		want []string
	}{
		{"rule edited", func() []string {
			h := handleOf(t, n, "ip", "kube-proxy", svcChain, "dnat")
			return []string{"replace rule ip kube-proxy " + svcChain + " handle " + h + " meta l4proto tcp dnat to 10.244.0.11:8080"}
		}, []string{"replace-chain " + svcChain}},
		{"element deleted", func() []string {
			return []string{"delete element ip kube-proxy service-ips { 10.96.0.10 . tcp . 80 }"}
		}, []string{"update-set service-ips"}},
		{"element added", func() []string {
			return []string{"add element ip kube-proxy cluster-ips { 10.96.9.9 }"}
		}, []string{"update-set cluster-ips"}},
		{"chain added", func() []string {
			return []string{"add chain ip kube-proxy by-hand", "add rule ip kube-proxy by-hand counter accept"}
		}, []string{"delete-chain by-hand"}},
		{"rule jumping to a hand-made chain", func() []string {
			return []string{"add chain ip kube-proxy by-hand", "add rule ip kube-proxy services jump by-hand"}
		}, []string{"replace-chain services", "delete-chain by-hand"}},
	}
	for _, d := range drifts {
		for _, cmd := range d.nft() {
			n.nft(t, "", strings.Fields(cmd)...)
		}
		p := n.plan(t, desired)[0]
		if got := changeNames(p); !slices.Equal(got, d.want) {
			t.Fatalf("%s: plan reports %q, want %q:\n%s", d.name, got, d.want, planText(t, p))
		}
		if err := n.client.Apply(context.Background(), []*applynft.Plan{p}); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		n.assertApplied(t, desired)
		assertReaches(t, n, "a", "b")
	}
}

// foreignTables are tables the tool does not own, in the families it
// writes and in others, one of them even named kube-proxy.
const foreignTables = `table ip filter {
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr 192.0.2.7 counter drop
	}
}
table inet other {
	set blocked {
		type ipv4_addr
		elements = { 198.51.100.9 }
	}
	chain forward {
		type filter hook forward priority filter + 5; policy accept;
		ip daddr @blocked drop
	}
}
table inet kube-proxy {
	chain c {
		counter
	}
}
table ip6 filter {
	chain output {
		type filter hook output priority filter; policy accept;
	}
}
`

// foreignListing is what nft lists for the foreign tables, byte for byte.
func foreignListing(t *testing.T, n *node) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range []string{"ip filter", "inet other", "inet kube-proxy", "ip6 filter"} {
		b.WriteString(n.nft(t, "", append([]string{"list", "table"}, strings.Fields(tb)...)...))
	}
	return b.String()
}

// TestForeignTablesSurvive checks that apply, a change and reset leave
// other tables exactly as they were, and that reset removes only
// kube-proxy's tables.
func TestForeignTablesSurvive(t *testing.T) {
	n := newNode(t)
	n.nft(t, foreignTables, "-f", "-")
	before := foreignListing(t, n)
	dual := goldenCase{}
	for _, gc := range goldenCases(t) {
		if len(gc.tables) == 2 {
			dual = gc
		}
	}
	if dual.name == "" {
		t.Fatal("no dual-stack golden case")
	}
	steps := [][]*nft.Ruleset{dual.tables, {labRender("10.244.0.11")}, {labRender("10.244.0.12", "10.244.0.13")}}
	for _, desired := range steps {
		n.apply(t, desired...)
		if after := foreignListing(t, n); after != before {
			t.Fatalf("apply changed foreign tables:\n--- before\n%s--- after\n%s", before, after)
		}
	}
	plans, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	if after := foreignListing(t, n); after != before {
		t.Fatalf("reset changed foreign tables:\n--- before\n%s--- after\n%s", before, after)
	}
	tables := n.nft(t, "", "list", "tables")
	want := "table ip filter\ntable inet other\ntable inet kube-proxy\ntable ip6 filter\n"
	if tables != want {
		t.Fatalf("after reset nft lists tables\n%s\nwant\n%s", tables, want)
	}
	again, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range again {
		if !p.Changes.Empty() {
			t.Fatalf("a second reset has changes:\n%s", planText(t, p))
		}
	}
}

// brokenDesired is desired plus a rule that jumps to a chain that exists
// nowhere: the kernel refuses the transaction that adds it.
func brokenDesired(desired *nft.Ruleset) *nft.Ruleset {
	c := *desired
	c.Chains = slices.Clone(desired.Chains)
	i := slices.IndexFunc(c.Chains, func(ch *nft.Chain) bool { return ch.Name == "services" })
	svc := *c.Chains[i]
	svc.Rules = append(slices.Clone(svc.Rules), "jump no-such-chain")
	c.Chains[i] = &svc
	return &c
}

// TestFailedApplyChangesNothing checks that a transaction the kernel
// refuses leaves every table as it was, including a table of another
// family that was already written, and that the error says so.
func TestFailedApplyChangesNothing(t *testing.T) {
	n := newNode(t)
	n.nft(t, foreignTables, "-f", "-")
	var dual []*nft.Ruleset
	for _, gc := range goldenCases(t) {
		if len(gc.tables) == 2 {
			dual = gc.tables
		}
	}
	n.apply(t, dual...)
	before := n.nft(t, "", "list", "ruleset")

	// One table, refused.
	plans := n.plan(t, brokenDesired(labRender("10.244.0.11")))
	err := n.client.Apply(context.Background(), plans)
	if err == nil || !strings.Contains(err.Error(), "ip kube-proxy") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("want an error naming the table and saying nothing changed, got %v", err)
	}
	if after := n.nft(t, "", "list", "ruleset"); after != before {
		t.Fatalf("a refused transaction changed the kernel:\n--- before\n%s--- after\n%s", before, after)
	}

	// The IPv4 table is written, then the IPv6 one is refused: the IPv4
	// table is put back, with the same content (sets and chains that were
	// deleted and restored come back in a new order), and nothing else
	// changes.
	beforeV4 := canonical(n.listed(t, nft.IPv4, "kube-proxy"))
	beforeOthers := foreignListing(t, n) + n.nft(t, "", "list", "table", "ip6", "kube-proxy")
	var v6 *nft.Ruleset
	for _, rs := range dual {
		if rs.Family == nft.IPv6 {
			v6 = rs
		}
	}
	plans = n.plan(t, labRender("10.244.0.11"), brokenDesired(v6))
	err = n.client.Apply(context.Background(), plans)
	var ae *applynft.ApplyError
	if !asApplyError(err, &ae) || ae.Family != "ip6" || !ae.RollbackOK {
		t.Fatalf("want an ApplyError for ip6 with the ip table restored, got %v", err)
	}
	if !strings.Contains(err.Error(), "restored") {
		t.Errorf("the error does not say the ip table was restored: %v", err)
	}
	if after := canonical(n.listed(t, nft.IPv4, "kube-proxy")); after != beforeV4 {
		t.Fatalf("a refused second table left the first changed:\n--- before\n%s--- after\n%s", beforeV4, after)
	}
	if after := foreignListing(t, n) + n.nft(t, "", "list", "table", "ip6", "kube-proxy"); after != beforeOthers {
		t.Fatalf("the refused apply changed other tables:\n--- before\n%s--- after\n%s", beforeOthers, after)
	}
	n.assertApplied(t, dual...)
}

func asApplyError(err error, ae **applynft.ApplyError) bool {
	e, ok := err.(*applynft.ApplyError)
	*ae = e
	return ok
}

// TestBusyStaleChainIsPending makes a stale chain impossible to delete (a
// rule the desired state keeps still jumps to it) and checks that apply
// empties it, reports it pending instead of failing, and deletes it on a
// later apply once nothing points to it.
func TestBusyStaleChainIsPending(t *testing.T) {
	n := newNode(t)
	n.client.StaleChainWait = 200e6 // 200 ms
	desired := labRender("10.244.0.11")
	withExtra := brokenDesired(desired)
	withExtra.Chains = append(slices.Clone(withExtra.Chains), &nft.Chain{Name: "no-such-chain", Rules: []nft.Rule{"reject"}})
	n.apply(t, withExtra)
	n.assertApplied(t, withExtra)

	// The chain goes, the jump to it stays: the deletion stays busy.
	keepsJump := brokenDesired(desired)
	plans := n.apply(t, keepsJump)
	if !slices.Equal(plans[0].Pending, []string{"no-such-chain"}) {
		t.Fatalf("pending chains %q, want [no-such-chain]", plans[0].Pending)
	}
	if c := n.listed(t, nft.IPv4, "kube-proxy").Chain("no-such-chain"); c == nil || len(c.Rules) != 0 {
		t.Fatalf("the busy stale chain should be left, emptied: %+v", c)
	}
	if got := changeNames(n.plan(t, keepsJump)[0]); !slices.Equal(got, []string{"delete-chain no-such-chain"}) {
		t.Fatalf("the next plan should still delete the pending chain, got %q", got)
	}
	plans = n.apply(t, desired)
	if len(plans[0].Pending) != 0 {
		t.Fatalf("still pending: %q", plans[0].Pending)
	}
	n.assertApplied(t, desired)
}

// TestScriptDoesWhatApplyDoes runs the dry-run script with nft -f instead
// of applying, for every golden case in turn and for a reset, and checks
// that the kernel then holds what apply would have made.
func TestScriptDoesWhatApplyDoes(t *testing.T) {
	n := newNode(t)
	run := func(t *testing.T, plans []*applynft.Plan) {
		script := applynft.Script(plans)
		if !strings.HasPrefix(script, "# transaction 1: ") {
			t.Fatalf("the script does not start with a transaction header:\n%s", script)
		}
		for _, section := range scriptSections(script) {
			n.nft(t, section, "-f", "-")
		}
	}
	for i, gc := range goldenCases(t) {
		t.Run(gc.name, func(t *testing.T) {
			plans := n.plan(t, gc.tables...)
			if i%2 == 0 {
				run(t, plans)
			} else if err := n.client.Apply(context.Background(), plans); err != nil {
				t.Fatal(err)
			}
			n.assertApplied(t, gc.tables...)
		})
	}
	plans, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	run(t, plans)
	if tables := n.nft(t, "", "list", "tables"); tables != "" {
		t.Fatalf("the reset script left tables:\n%s", tables)
	}
	if s := applynft.Script(n.plan(t)); s != "" {
		t.Fatalf("no plans, yet a script:\n%s", s)
	}
}

// scriptSections splits Script's output at its transaction headers.
func scriptSections(script string) []string {
	var out []string
	for _, line := range strings.SplitAfter(script, "\n") {
		if strings.HasPrefix(line, "# transaction ") || len(out) == 0 {
			out = append(out, "")
		}
		out[len(out)-1] += line
	}
	return out
}
