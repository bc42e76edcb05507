package ipvs

import (
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	applyipt "github.com/kubectl-svcproxy/kubectl-svcproxy/apply/iptables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// renderTable renders a synthetic table in ipvs mode for the lab's node IP.
func renderTable(t *nodetable.ServiceTable, sched string) *ipvs.Ruleset {
	cfg := render.DefaultConfig()
	cfg.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("10.128.0.0/9")}
	return render.IPVS(t, cfg, render.IPVSOptions{Scheduler: sched})
}

// withoutNodePorts returns a copy of t with no NodePorts, so that a
// later table with NodePorts changes the helper chains too.
func withoutNodePorts(t *nodetable.ServiceTable) *nodetable.ServiceTable {
	c := *t
	c.Ports = slices.Clone(t.Ports)
	for i := range c.Ports {
		c.Ports[i].NodePort = 0
	}
	return &c
}

// hostClient returns a client whose ipsets and helper chains are real, in
// a fresh lab namespace, and whose IPVS and kube-ipvs0 are modelled.
func hostClient(t *testing.T) (*Client, *hostKernel, *nsExec) {
	t.Helper()
	testenv.RequireTools(t, "ipset", "iptables-nft-restore")
	lab := netlab.New(t)
	nl, err := openNetlink("/run/netns/" + lab.Node().Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	k := newHostKernel(nl)
	ex := &nsExec{ns: lab.Node(), k: k}
	own := render.IPVSOwnership(nil)
	return &Client{Kernel: k, IPTables: &applyipt.Client{Exec: ex, Backend: applyipt.NFT, Ownership: own.Chains}, Ownership: own, PollInterval: 10 * time.Millisecond}, k, ex
}

func mustPlan(t *testing.T, c *Client, desired ...*ipvs.Ruleset) []*Plan {
	t.Helper()
	plans, err := c.Plan(t.Context(), desired)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}

func planText(t *testing.T, plans []*Plan) string {
	var b strings.Builder
	for _, p := range plans {
		if err := p.Changes.WriteText(&b, "kernel"); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func requireEmpty(t *testing.T, c *Client, desired ...*ipvs.Ruleset) {
	t.Helper()
	for _, p := range mustPlan(t, c, desired...) {
		if !p.Changes.Empty() {
			t.Fatalf("plan after apply is not empty:\n%s", planText(t, []*Plan{p}))
		}
	}
}

// TestApplyFromEmptyThenNothing applies a render to an empty node, checks
// that the kernel's sets and chains hold it, and that a second plan is empty.
func TestApplyFromEmptyThenNothing(t *testing.T) {
	c, k, _ := hostClient(t)
	desired := renderTable(synthetic.Table(30, 3), "rr")
	plans := mustPlan(t, c, desired)
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	requireEmpty(t, c, desired)
	for _, want := range desired.Sets {
		got, err := k.NetlinkKernel.Set(want.Name)
		if err != nil || got == nil {
			t.Fatalf("set %s: %v", want.Name, err)
		}
		slices.Sort(got.Entries)
		if !slices.Equal(got.Entries, want.Entries) {
			t.Errorf("set %s holds %v, want %v", want.Name, got.Entries, want.Entries)
		}
	}
	live, err := c.IPTables.Read(t.Context(), nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	if cs := diff.IPTables(desired.IPTables, live, render.IPVSOwnership(nil).Chains); !cs.Empty() {
		t.Errorf("helper chains differ after apply")
	}
}

// callIndex returns the position of the first call with the prefix, or -1.
func callIndex(calls []string, prefix string) int {
	return slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

func lastCallIndex(calls []string, prefix string) int {
	for i := len(calls) - 1; i >= 0; i-- {
		if strings.HasPrefix(calls[i], prefix) {
			return i
		}
	}
	return -1
}

// TestApplyOrder checks the three phases: every set, entry, virtual and
// real server and address added before the helper chains are written,
// each address bound after its virtual server is complete, and every
// removal after the chains.
func TestApplyOrder(t *testing.T) {
	c, k, _ := hostClient(t)
	big := withoutNodePorts(synthetic.Table(30, 3))
	if err := c.Apply(t.Context(), mustPlan(t, c, renderTable(big, "rr"))); err != nil {
		t.Fatal(err)
	}
	// Replace Services 0-9 (0 is a NodePort) by 10 new ones, and drop an endpoint elsewhere.
	next := *big
	next.Ports = slices.Clone(big.Ports[10:])
	more := synthetic.Table(40, 3)
	next.Ports = append(next.Ports, more.Ports[30:]...)
	synthetic.SetEndpoints(&next.Ports[0], next.Ports[0].AllEndpoints[:2])
	k.log = nil
	desired := renderTable(&next, "rr")
	if err := c.Apply(t.Context(), mustPlan(t, c, desired)); err != nil {
		t.Fatal(err)
	}
	calls := k.calls()
	ipt := callIndex(calls, "iptables-restore")
	if ipt < 0 {
		t.Fatalf("no helper chain change; calls: %v", calls)
	}
	for _, add := range []string{"create-set", "add-entry", "add-service", "add-dest", "add-address"} {
		if i := lastCallIndex(calls, add); i > ipt {
			t.Errorf("%s at call %d, after the helper chains (%d)", calls[i], i, ipt)
		}
	}
	for _, del := range []string{"delete-dest", "delete-service", "delete-address", "delete-entry"} {
		if i := callIndex(calls, del); i < 0 || i < ipt {
			t.Errorf("%s at call %d, want after the helper chains (%d)", del, i, ipt)
		}
	}
	if lastCallIndex(calls, "delete-service") > callIndex(calls, "delete-address") {
		t.Errorf("an address was unbound before the stale virtual servers were deleted")
	}
	for _, vs := range desired.VirtualServers {
		addr := "add-address " + netip.PrefixFrom(vs.Address, 32).String()
		if a := callIndex(calls, addr); a >= 0 && a < lastCallIndex(calls, "add-dest "+vs.Service()) {
			t.Errorf("%s bound before its real servers were added", vs.Address)
		}
	}
	requireEmpty(t, c, desired)
}

// snapshotState returns everything the client reads, as text.
func snapshotState(t *testing.T, c *Client, f nodetable.Family) string {
	t.Helper()
	live, _, _, err := c.read(t.Context(), diff.EmptyIPVS(f))
	if err != nil {
		t.Fatal(err)
	}
	if live.IPTables, err = c.IPTables.Read(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	return live.String()
}

// TestApplyUndoesAfterAFailure makes one kernel call fail midway through
// the additions, and then the helper chains, and checks that the kernel
// ends as it was before, with an error that says so.
func TestApplyUndoesAfterAFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failOn string
		chains bool
	}{
		{"address", "add-address 10.96.0.20/32", false},
		{"real server", "add-dest -t 10.96.0.25:80", false},
		{"helper chains", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, k, ex := hostClient(t)
			if err := c.Apply(t.Context(), mustPlan(t, c, renderTable(withoutNodePorts(synthetic.Table(10, 2)), "rr"))); err != nil {
				t.Fatal(err)
			}
			before := snapshotState(t, c, nodetable.IPv4)
			plans := mustPlan(t, c, renderTable(synthetic.Table(30, 2), "wrr"))
			if tc.chains {
				ex.failRestore = true
			} else {
				k.failOn = func(call string) error {
					if strings.HasPrefix(call, tc.failOn) {
						return errors.New("injected failure")
					}
					return nil
				}
			}
			err := c.Apply(t.Context(), plans)
			var ae *ApplyError
			if !errors.As(err, &ae) || ae.Undone == 0 || ae.UndoErr != nil || !strings.Contains(err.Error(), "were undone") {
				t.Fatalf("error %v; want an ApplyError whose changes were undone", err)
			}
			t.Log(err)
			k.failOn, ex.failRestore = nil, false
			if after := snapshotState(t, c, nodetable.IPv4); after != before {
				t.Errorf("kernel not restored:\n--- before\n%s\n--- after\n%s", before, after)
			}
		})
	}
}

// TestScriptIsADryRun checks that Script lists the plan's calls as
// commands in Apply's order and changes nothing.
func TestScriptIsADryRun(t *testing.T) {
	c, k, _ := hostClient(t)
	if err := c.Apply(t.Context(), mustPlan(t, c, renderTable(withoutNodePorts(synthetic.Table(5, 2)), "rr"))); err != nil {
		t.Fatal(err)
	}
	before := snapshotState(t, c, nodetable.IPv4)
	k.log = nil
	next := synthetic.Table(11, 2) // Services 3-10: 0-2 go, 5-10 come, 10 is a NodePort
	next.Ports = next.Ports[3:]
	desired := renderTable(next, "wrr")
	plans := mustPlan(t, c, desired)
	script := c.Script(plans)
	if calls := k.calls(); len(calls) != 0 {
		t.Errorf("Script made kernel calls: %v", calls)
	}
	if after := snapshotState(t, c, nodetable.IPv4); after != before {
		t.Errorf("Script changed the kernel")
	}
	order := []string{"ipset add ", "ipvsadm -A ", "ip addr add ", "iptables-nft-restore --noflush", "ipvsadm -D ", "ip addr del ", "ipset del "}
	last := -1
	for _, want := range order {
		i := strings.Index(script, "\n"+want)
		if i < 0 || i < last {
			t.Fatalf("script lacks %q after the previous step:\n%s", want, script)
		}
		last = i
	}
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	if got, want := len(k.calls()), strings.Count(script, "\nipset ")+strings.Count(script, "\nipvsadm ")+strings.Count(script, "\nip ")+strings.Count(script, "-restore --noflush"); got != want {
		t.Errorf("Apply made %d calls, the script lists %d:\n%s", got, want, script)
	}
}

// TestWaitDrained drains a busy TCP real server and checks that
// WaitDrained deletes it only once its connections are gone.
func TestWaitDrained(t *testing.T) {
	c, k, _ := hostClient(t)
	table := synthetic.Table(3, 2)
	if err := c.Apply(t.Context(), mustPlan(t, c, renderTable(table, "rr"))); err != nil {
		t.Fatal(err)
	}
	sp := &table.Ports[1]
	gone := sp.AllEndpoints[1]
	key := diff.IPVSDestKey{Service: diff.IPVSServiceKey{Protocol: ipvs.TCP, Address: netip.AddrPortFrom(sp.ClusterIP, 80)},
		Dest: netip.AddrPortFrom(gone.IP, uint16(gone.Port))}
	k.mu.Lock()
	k.conns[key] = diff.IPVSConns{Active: 1}
	k.mu.Unlock()
	synthetic.SetEndpoints(sp, sp.AllEndpoints[:1])
	plans := mustPlan(t, c, renderTable(table, "rr"))
	if s := plans[0].Changes.Summary(); s.DestinationsDraining != 1 {
		t.Fatalf("plan %v: want one real server drained", s)
	}
	if err := c.Apply(t.Context(), plans); err != nil {
		t.Fatal(err)
	}
	if n, err := c.WaitDrained(t.Context(), plans, 50*time.Millisecond); n != 0 || err == nil || !strings.Contains(err.Error(), "still draining") {
		t.Fatalf("with the connection open: deleted %d, %v", n, err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		k.mu.Lock()
		k.conns[key] = diff.IPVSConns{}
		k.mu.Unlock()
	}()
	if n, err := c.WaitDrained(t.Context(), plans, 5*time.Second); n != 1 || err != nil {
		t.Fatalf("after the connection closed: deleted %d, %v", n, err)
	}
	requireEmpty(t, c, renderTable(table, "rr"))
}

// TestOpenKernelWithoutIPVS checks the error on a kernel without IPVS
// (this host's): clear, and found before github.com/moby/ipvs is opened.
func TestOpenKernelWithoutIPVS(t *testing.T) {
	if _, err := os.Stat("/proc/net/ip_vs"); err == nil {
		// Not a missing prerequisite: this test is about kernels without
		// IPVS, and on one with it the IPVS tests run instead. A plain
		// skip, also under CI.
		t.Skip("this kernel has IPVS")
	}
	lab := netlab.New(t)
	k, err := OpenKernel("/run/netns/" + lab.Node().Name())
	if err == nil {
		k.Close()
		t.Fatal("OpenKernel succeeded without IPVS")
	}
	if !errors.Is(err, ErrNoIPVS) || !strings.Contains(err.Error(), "load the ip_vs kernel module") {
		t.Errorf("error %q; want ErrNoIPVS", err)
	}
}
