package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The trace's own table, as the binary names it, and the operator's
// tables the tests create beside it.
const (
	traceTable    = "kubectl-svcproxy-trace"
	operatorTable = "svcproxy-trace" // the name the trace's table once had
)

// nodeTrace is a trace from the node itself to a ClusterIP: its probe
// goes out and comes back over loopback, and the trace waits for its
// events to stop, which gives a second trace time to start meanwhile.
var nodeTrace = []string{"--from", "192.168.77.10", "--to", "10.96.0.10:80"}

// blockedTrace is a trace whose probe a chain of the operator's drops
// before the trace's own first chain sees it (see blockProbes).
var blockedTrace = []string{"--from", "203.0.113.99", "--to", "192.0.2.20:443"}

// blockProbes adds the operator's table ip block, whose prerouting chain
// (priority -400, before the trace's -350) drops what comes from
// 203.0.113.99: the kernel emits no trace event for that probe at all.
func blockProbes(n *e2eNode) {
	n.nft("add", "table", "ip", "block")
	n.nft("add", "chain", "ip", "block", "pre", "{ type filter hook prerouting priority -400 ; }")
	n.nft("add", "rule", "ip", "block", "pre", "ip", "saddr", "203.0.113.99", "drop")
}

// tables lists the node's inet tables.
func (n *e2eNode) inetTables() []string {
	var out []string
	for line := range strings.Lines(n.nft("list", "tables", "inet")) {
		out = append(out, strings.TrimPrefix(strings.TrimSpace(line), "table inet "))
	}
	return out
}

// Two traces started at once in the same node must both report what a
// trace alone reports: the kernel agrees. They once shared one table,
// which each replaced and deleted under the other.
func TestE2ETraceKernelConcurrent(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	for round := range 16 {
		var wg sync.WaitGroup
		results := make([]result, 2)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = n.run("trace", append(slices.Clone(nftablesArgs), append([]string{"--live", "--kernel", "-o", "json"}, nodeTrace...)...)...)
			}()
		}
		wg.Wait()
		for i, r := range results {
			var got kernelTraceJSON
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Kernel == nil || r.code != ExitOK || !got.Kernel.Agrees {
				t.Errorf("round %d, trace %d of 2 run at once: want exit 0 and agreement:\n%s", round, i+1, r)
			}
		}
	}
	if tables := n.inetTables(); slices.Contains(tables, traceTable) {
		t.Errorf("the traces left their table: %v", tables)
	}
}

// An operator's tables survive traces and reset: one named as the
// trace's table once was, and one named as it is now but without the
// tool's mark, which the trace refuses to touch.
func TestE2ETraceKernelOperatorTables(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	n.nft("add", "table", "inet", operatorTable)
	n.nft("add", "chain", "inet", operatorTable, "mine")
	n.kernelTrace(t, nftablesArgs, nodeTrace...)
	n.kernelTrace(t, nftablesArgs, "--from", "10.244.0.5", "--to", "10.96.0.10:80")
	n.nft("add", "table", "inet", traceTable, "{ comment \"the operator's\" ; }")
	r := n.run("trace", append(slices.Clone(nftablesArgs), append([]string{"--live", "--kernel"}, nodeTrace...)...)...)
	if r.code != ExitError || !strings.Contains(r.stderr, "table inet "+traceTable) || !strings.Contains(r.stderr, "not the tool's") {
		t.Errorf("a table of the trace's name without its mark: want exit 2 naming it:\n%s", r)
	}
	expect(t, n.run("reset", "--mode=nftables", "--family=ipv4"), ExitOK)
	if tables := n.inetTables(); !slices.Contains(tables, operatorTable) || !slices.Contains(tables, traceTable) {
		t.Fatalf("after traces and a reset, the operator's tables are gone: inet tables %v", tables)
	}
	if out := n.nft("list", "table", "inet", operatorTable); !strings.Contains(out, "chain mine") {
		t.Errorf("the operator's table lost its chain:\n%s", out)
	}
}

// A trace killed while its table is in the kernel leaves the table, with
// the tool's mark; reset removes it, but not while another trace holds
// the lock. Another trace meanwhile waits for the lock, as long as
// --lock-wait says, and fails naming the holder.
func TestE2ETraceKernelKilled(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	blockProbes(n)
	p := n.startBlockedTrace(t)
	r := n.run("reset", "--mode=nftables", "--family=ipv4")
	if r.code != ExitError || !strings.Contains(r.stderr, "lock") || !slices.Contains(n.inetTables(), traceTable) {
		t.Errorf("reset while a trace runs: want exit 2 for the lock, and the trace's table kept:\n%s", r)
	}
	p.kill(t)
	if out := n.nft("list", "table", "inet", traceTable); !strings.Contains(out, "kubectl-svcproxy") {
		t.Fatalf("the killed trace's table carries no mark:\n%s", out)
	}
	expect(t, n.run("reset", "--mode=nftables", "--family=ipv4", "--dry-run"), ExitOK, "delete table inet "+traceTable)
	if !slices.Contains(n.inetTables(), traceTable) {
		t.Fatalf("reset --dry-run removed the killed trace's table")
	}
	expect(t, n.run("reset", "--mode=nftables", "--family=ipv4"), ExitOK, "table inet "+traceTable)
	if tables := n.inetTables(); slices.Contains(tables, traceTable) {
		t.Errorf("reset left the killed trace's table: inet tables %v", tables)
	}
	if !strings.Contains(n.nft("list", "tables"), "table ip block") {
		t.Errorf("reset removed the operator's table ip block")
	}
	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	p = n.startBlockedTrace(t)
	r = n.run("trace", append(slices.Clone(nftablesArgs), append([]string{"--live", "--kernel", "--lock-wait=500ms"}, nodeTrace...)...)...)
	if r.code != ExitError || !strings.Contains(r.stderr, "held by pid") || !strings.Contains(r.stderr, "after waiting 500ms") {
		t.Errorf("a trace while another holds the lock: want exit 2 naming the holder and the wait:\n%s", r)
	}
	p.kill(t)
}

// startBlockedTrace starts a trace of blockedTrace in the background and
// waits for its table: it then waits for its probe's events, in vain,
// for the bound (3 s).
func (n *e2eNode) startBlockedTrace(t *testing.T) *bgProc {
	t.Helper()
	p := n.startBackground(t, "trace", nil, "trace", append(slices.Clone(nftablesArgs), append([]string{"--live", "--kernel"}, blockedTrace...)...)...)
	p.waitFor(t, "the trace's table", 20*time.Second, func() bool { return slices.Contains(n.inetTables(), traceTable) })
	return p
}

// kill kills the process with SIGKILL, which it must still be running
// to receive.
func (p *bgProc) kill(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s ended (exit %d) before it could be killed", p.what, p.code)
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// A probe the kernel never passes to the trace's chains ends the trace
// with an error that says what it waited for and how long, within the
// bound, instead of a verdict read from no events.
func TestE2ETraceKernelWaitBound(t *testing.T) {
	t.Parallel()
	n := newE2ENode(t, "nft")
	expect(t, n.run("apply", nftablesArgs...), ExitOK)
	blockProbes(n)
	r := n.run("trace", append(slices.Clone(nftablesArgs), append([]string{"--live", "--kernel", "-o", "json"}, blockedTrace...)...)...)
	// The error names the bound that ended the wait; an unbounded wait
	// is a hang, which the command's timeout turns into a failure.
	if r.code != ExitError || !strings.Contains(r.stderr, "trace event") || !strings.Contains(r.stderr, "3s") {
		t.Errorf("a probe with no trace events: want exit 2 saying what was waited for and how long:\n%s", r)
	}
	if tables := n.inetTables(); slices.Contains(tables, traceTable) {
		t.Errorf("the failed trace left its table: %v", tables)
	}
}
