package nftables_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	applynft "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The apply logic on the in-memory kernel (FakeKernel), without root: what
// is sent, in which order, what is undone and retried. The kernel tests
// (apply_kernel_test.go) keep what only the kernel can say: that it takes
// the same transactions, lists what was rendered, and passes packets.

// TestGoldenTransitionsOnFake applies the render of every golden case onto
// the tables of every golden case: each transaction passes the kernel's
// checks in the order it is sent, the tables end as rendered, a second
// plan finds nothing to do, and the state that the client's cache
// computes from the plan is the one the kernel holds. The real kernel goes
// through the cases one after the other (TestApplyGoldenCasesOneAfterAnother).
func TestGoldenTransitionsOnFake(t *testing.T) {
	cases := goldenCases(t)
	for _, from := range cases {
		for _, to := range cases {
			t.Run(from.name+"/to/"+to.name, func(t *testing.T) {
				n := newFakeNode(t)
				n.client.Cache = true
				n.apply(t, from.tables...)
				n.apply(t, to.tables...)
				reads := n.fake.Reads()
				n.assertApplied(t, to.tables...)
				for _, p := range n.plan(t, to.tables...) {
					if got, want := canonical(p.Live), canonical(n.listed(t, p.Family, "kube-proxy")); got != want {
						t.Fatalf("%s: the cache holds another table than the kernel:\n--- cache\n%s--- kernel\n%s", p.Family, got, want)
					}
				}
				if got := n.fake.Reads(); got != reads {
					t.Errorf("the plans after the apply read the kernel %d times; the cache should serve them", got-reads)
				}
			})
		}
	}
}

// dualStack is the tables of a golden case with both families.
func dualStack(t testing.TB) []*nft.Ruleset {
	t.Helper()
	for _, gc := range goldenCases(t) {
		if len(gc.tables) == 2 && gc.tables[0].Family == nft.IPv4 {
			return gc.tables
		}
	}
	t.Fatal("no dual-stack golden case")
	return nil
}

// TestFailedApplyIsUndone: a transaction the kernel refuses changes
// nothing and the error says so; when it is the second table's, the first
// table, already written, is put back as Plan read it, and the error says
// that too. The kernel's own all-or-nothing is TestFailedTransaction's,
// and TestFailedApplyChangesNothing runs the same on the kernel.
func TestFailedApplyIsUndone(t *testing.T) {
	n := newFakeNode(t)
	dual := dualStack(t)
	n.apply(t, dual...)
	before := [2]string{canonical(n.listed(t, nft.IPv4, "kube-proxy")), canonical(n.listed(t, nft.IPv6, "kube-proxy"))}
	unchanged := func(what string) {
		t.Helper()
		now := [2]string{canonical(n.listed(t, nft.IPv4, "kube-proxy")), canonical(n.listed(t, nft.IPv6, "kube-proxy"))}
		if now != before {
			t.Fatalf("%s changed the tables:\n--- before\n%s%s--- after\n%s%s", what, before[0], before[1], now[0], now[1])
		}
	}

	err := n.client.Apply(context.Background(), n.plan(t, brokenDesired(labRender("10.244.0.11"))))
	if !errors.Is(err, unix.ENOENT) || !strings.Contains(err.Error(), "ip kube-proxy") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("want the kernel's ENOENT, naming the table and saying nothing changed, got %v", err)
	}
	unchanged("a refused transaction")

	sent := len(n.fake.Sent())
	err = n.client.Apply(context.Background(), n.plan(t, labRender("10.244.0.11"), brokenDesired(dual[1])))
	var ae *applynft.ApplyError
	if !errors.As(err, &ae) || ae.Family != "ip6" || !ae.RollbackOK || !strings.Contains(err.Error(), "restored") {
		t.Fatalf("want an ApplyError for ip6 saying the ip table was restored, got %v", err)
	}
	unchanged("a refused second table")
	if got := sentTables(n.fake.Sent()[sent:]); got != "ip ok, ip6 refused, ip ok" {
		t.Errorf("transactions sent: %s; want the ip table, the refused ip6 one, then the ip table put back", got)
	}
	n.assertApplied(t, dual...)
}

// sentTables is "family ok|refused" for each transaction, in order.
func sentTables(txs []applynft.FakeTx) string {
	var out []string
	for _, tx := range txs {
		s := string(tx.Family) + " ok"
		if tx.Err != nil {
			s = string(tx.Family) + " refused"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// TestFailedUndoIsReported: when putting the first table back fails too,
// because its commit is refused or its read fails, the error says that
// the table is left changed, and the next plan reads the kernel.
func TestFailedUndoIsReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(k *applynft.FakeKernel, tx applynft.FakeTx, n int) error
		want string
	}{
		{"undo refused", func(k *applynft.FakeKernel, tx applynft.FakeTx, n int) error {
			if n >= 2 {
				return unix.ENOMEM
			}
			return nil
		}, "cannot allocate memory"},
		{"undo cannot read", func(k *applynft.FakeKernel, tx applynft.FakeTx, n int) error {
			if n == 2 {
				k.ReadErr = errors.New("the ruleset kept changing")
				return unix.EPERM
			}
			return nil
		}, "the ruleset kept changing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNode(t)
			n.client.Cache = true
			dual := dualStack(t)
			n.apply(t, dual...)
			commits := 0
			n.fake.BeforeCommit = func(tx applynft.FakeTx) error {
				commits++
				return tc.fail(n.fake, tx, commits)
			}
			err := n.client.Apply(context.Background(), n.plan(t, labRender("10.244.0.11"), withExtraChain(dual[1], "extra")))
			var ae *applynft.ApplyError
			if !errors.As(err, &ae) || ae.RollbackOK || ae.Rollback == nil ||
				!strings.Contains(err.Error(), "undoing the tables already written failed") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an ApplyError saying the undo failed (%s), got %v", tc.want, err)
			}
			n.fake.BeforeCommit, n.fake.ReadErr = nil, nil
			reads := n.fake.Reads()
			p := n.plan(t, dual[0])[0]
			if n.fake.Reads() == reads || p.Changes.Empty() {
				t.Errorf("after a failed undo the next plan must read the changed ip table (read %v, changes %q)", n.fake.Reads() != reads, changeNames(p))
			}
		})
	}
}

// withExtraChain is rs with one more, empty, chain.
func withExtraChain(rs *nft.Ruleset, name string) *nft.Ruleset {
	c := *rs
	c.Chains = append(slices.Clip(rs.Chains), &nft.Chain{Name: name})
	return &c
}

// TestCancelBetweenTablesIsUndone: a context cancelled after the first
// table was written stops the apply before the second, and the first is
// put back all the same.
func TestCancelBetweenTablesIsUndone(t *testing.T) {
	n := newFakeNode(t)
	dual := dualStack(t)
	n.apply(t, dual...)
	before := canonical(n.listed(t, nft.IPv4, "kube-proxy"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.fake.BeforeCommit = func(tx applynft.FakeTx) error {
		if tx.Family == nft.IPv4 {
			cancel()
		}
		return nil
	}
	err := n.client.Apply(ctx, n.plan(t, labRender("10.244.0.11"), withExtraChain(dual[1], "extra")))
	var ae *applynft.ApplyError
	if !errors.As(err, &ae) || !errors.Is(err, context.Canceled) || ae.Family != "ip6" || !ae.RollbackOK {
		t.Fatalf("want the ip6 table's ApplyError for the cancel, with the ip table restored; got %v", err)
	}
	if got := canonical(n.listed(t, nft.IPv4, "kube-proxy")); got != before {
		t.Fatalf("the ip table was not put back:\n--- before\n%s--- after\n%s", before, got)
	}
	if n.listed(t, nft.IPv6, "kube-proxy").Chain("extra") != nil {
		t.Fatal("the ip6 table was written after the cancel")
	}
}

// staleSetup applies labRender with two more chains that the services
// chain jumps to, "busy" and "free", and returns the render without them
// in which the jump to busy stays: busy cannot be deleted, free can.
func staleSetup(t *testing.T, n *node) *nft.Ruleset {
	t.Helper()
	desired := labRender("10.244.0.11")
	with := brokenDesired(desired) // services jumps to no-such-chain
	svc := with.Chain("services")
	svc.Rules = append(svc.Rules, "jump free")
	with.Chains = append(slices.Clone(with.Chains),
		&nft.Chain{Name: "no-such-chain", Rules: []nft.Rule{"reject"}}, &nft.Chain{Name: "free", Rules: []nft.Rule{"drop"}})
	n.apply(t, with)
	return brokenDesired(desired)
}

// TestStaleChainsOnFake: the stale chains' transaction is retried while
// the kernel reports a chain busy, for StaleChainWait; then each chain is
// deleted alone, and those still busy are left, emptied, for the next
// apply, which the cache knows. The kernel's own EBUSY is
// TestBusyStaleChainIsPending's.
func TestStaleChainsOnFake(t *testing.T) {
	n := newFakeNode(t)
	n.client.Cache = true
	n.client.StaleChainWait = 300e6 // 300 ms: three tries, 50 and 100 ms apart
	keepsJump := staleSetup(t, n)
	sent := len(n.fake.Sent())
	plans := n.apply(t, keepsJump)
	if !slices.Equal(plans[0].Pending, []string{"no-such-chain"}) {
		t.Fatalf("pending chains %q, want [no-such-chain]", plans[0].Pending)
	}
	var tries []string
	for _, tx := range n.fake.Sent()[sent+1:] {
		tries = append(tries, strings.TrimSpace(strings.ReplaceAll(tx.Script, "delete chain ip kube-proxy ", "")))
	}
	// How many tries fit in the wait depends on the scheduler; at least
	// the first retry does.
	together := len(tries) - 2
	want := slices.Repeat([]string{"no-such-chain\nfree"}, max(together, 2))
	want = append(want, "no-such-chain", "free")
	if together > 3 || !slices.Equal(tries, want) {
		t.Errorf("stale chain transactions %q: want both chains tried together 2 or 3 times in 300 ms, then one by one", tries)
	}
	got := n.listed(t, nft.IPv4, "kube-proxy")
	if c := got.Chain("no-such-chain"); c == nil || len(c.Rules) != 0 || got.Chain("free") != nil {
		t.Fatalf("want the busy chain left empty and the free one gone, got %v and %v", got.Chain("no-such-chain"), got.Chain("free"))
	}
	reads := n.fake.Reads()
	if names := changeNames(n.plan(t, keepsJump)[0]); !slices.Equal(names, []string{"delete-chain no-such-chain"}) || n.fake.Reads() != reads {
		t.Fatalf("the next plan, from the cache, should delete the pending chain; got %q", names)
	}
}

// TestStaleChainBusyForAWhile: a chain the kernel reports busy for a
// moment after the element that pointed to it went (kernels before 6.2)
// is deleted by a retry, and nothing is pending.
func TestStaleChainBusyForAWhile(t *testing.T) {
	n := newFakeNode(t)
	staleSetup(t, n)
	busy := 2
	n.fake.BeforeCommit = func(tx applynft.FakeTx) error {
		if strings.HasPrefix(tx.Script, "delete chain") && busy > 0 {
			busy--
			return unix.EBUSY
		}
		return nil
	}
	plans := n.apply(t, labRender("10.244.0.11"))
	if len(plans[0].Pending) != 0 || busy != 0 {
		t.Fatalf("pending %q after %d refusals; want the chains deleted by the third try", plans[0].Pending, 2-busy)
	}
	n.assertApplied(t, labRender("10.244.0.11"))
}

// TestStaleChainGoneOrRefused: a stale chain that someone else deleted
// meanwhile counts as deleted; any other refusal fails the apply, which
// says the changes themselves are applied, and the cache forgets.
func TestStaleChainGoneOrRefused(t *testing.T) {
	n := newFakeNode(t)
	n.client.Cache = true
	staleSetup(t, n)
	desired := labRender("10.244.0.11")
	n.fake.BeforeCommit = func(tx applynft.FakeTx) error {
		if strings.HasPrefix(tx.Script, "delete chain") {
			n.fake.Edit(nft.IPv4, "kube-proxy", func(rs *nft.Ruleset) *nft.Ruleset {
				rs.Chains = slices.DeleteFunc(rs.Chains, func(c *nft.Chain) bool { return c.Name == "free" })
				return rs
			})
		}
		return nil
	}
	if plans := n.apply(t, desired); len(plans[0].Pending) != 0 {
		t.Fatalf("pending %q; a chain already gone is deleted", plans[0].Pending)
	}
	n.assertApplied(t, desired)

	staleSetup(t, n)
	n.fake.BeforeCommit = func(tx applynft.FakeTx) error {
		if strings.HasPrefix(tx.Script, "delete chain") {
			return unix.EPERM
		}
		return nil
	}
	err := n.client.Apply(context.Background(), n.plan(t, desired))
	if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "the changes are applied, but deleting the stale chains failed") {
		t.Fatalf("want the stale chains' EPERM, saying the changes are applied; got %v", err)
	}
	n.fake.BeforeCommit = nil
	reads := n.fake.Reads()
	if names := changeNames(n.plan(t, desired)[0]); !slices.Equal(names, []string{"delete-chain no-such-chain", "delete-chain free"}) || n.fake.Reads() == reads {
		t.Fatalf("after the failure the next plan must read the kernel and find the stale chains, got %q", names)
	}
}

// TestScriptIsWhatApplySends: for every golden case in turn and a reset,
// Script prints exactly the transactions Apply sends, in order.
func TestScriptIsWhatApplySends(t *testing.T) {
	n := newFakeNode(t)
	check := func(t *testing.T, plans []*applynft.Plan) {
		script := applynft.Script(plans)
		sent := len(n.fake.Sent())
		if err := n.client.Apply(context.Background(), plans); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tx := range n.fake.Sent()[sent:] {
			got = append(got, tx.Script)
		}
		var want []string
		for _, section := range scriptSections(script) {
			if section != "" {
				_, body, _ := strings.Cut(section, "\n")
				want = append(want, body)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("apply sent\n%s\nthe script says\n%s", strings.Join(got, "----\n"), script)
		}
	}
	for _, gc := range goldenCases(t) {
		t.Run(gc.name, func(t *testing.T) { check(t, n.plan(t, gc.tables...)) })
	}
	plans, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	check(t, plans)
	if n.listed(t, nft.IPv4, "kube-proxy") != nil || n.listed(t, nft.IPv6, "kube-proxy") != nil {
		t.Fatal("the reset left a table")
	}
}

// TestResetOnFake: reset deletes kube-proxy's tables of the families
// given, and only those; a second reset has nothing to do. (That nft
// lists the other tables byte for byte unchanged is
// TestForeignTablesSurvive's.)
func TestResetOnFake(t *testing.T) {
	n := newFakeNode(t)
	n.apply(t, dualStack(t)...)
	foreign := &nft.Ruleset{Family: "inet", Table: "kube-proxy", Chains: []*nft.Chain{{Name: "c", Rules: []nft.Rule{"accept"}}}}
	n.fake.Edit("inet", "kube-proxy", func(*nft.Ruleset) *nft.Ruleset { return foreign })
	plans, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.client.Apply(context.Background(), plans); err != nil {
		t.Fatal(err)
	}
	if n.listed(t, nft.IPv4, "kube-proxy") != nil || n.listed(t, nft.IPv6, "kube-proxy") != nil {
		t.Fatal("reset left a kube-proxy table of its families")
	}
	if got := n.fake.Table("inet", "kube-proxy"); got == nil || !got.Equal(foreign) {
		t.Fatalf("reset changed table inet kube-proxy: %v", got)
	}
	again, err := n.client.PlanReset(context.Background(), []nft.Family{nft.IPv4, nft.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range again {
		if !p.Changes.Empty() || applynft.Script(again) != "" {
			t.Fatalf("a second reset has changes:\n%s", planText(t, p))
		}
	}
}
