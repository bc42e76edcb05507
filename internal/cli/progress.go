package cli

import (
	"fmt"
	"io"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// progressThreshold is how long a stage must take for its line to be
// printed: a short run stays quiet.
const progressThreshold = time.Second

// progress reports on stderr the stages of a one-shot command (decode,
// render, read the kernel and diff, apply) that took longer than
// progressThreshold, each as one line when it ends, with its counts. A
// nil *progress reports nothing.
type progress struct {
	w     io.Writer
	clock clock.PassiveClock
}

// stage is one stage under way; Done ends it.
type stage struct {
	p     *progress
	start time.Time
}

// reporter returns the command's progress reporter: nil unless --progress
// is on (by default when stderr is a terminal).
func (c *common) reporter() *progress {
	if !c.progress {
		return nil
	}
	clk := c.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &progress{w: c.streams.ErrOut, clock: clk}
}

// Start starts a stage.
func (p *progress) Start() *stage {
	if p == nil {
		return nil
	}
	return &stage{p: p, start: p.clock.Now()}
}

// Done ends the stage: if it took longer than progressThreshold, it prints
// what the stage did (format and args, as fmt.Printf) and how long it took.
func (s *stage) Done(format string, args ...any) {
	if s == nil {
		return
	}
	took := s.p.clock.Since(s.start)
	if took <= progressThreshold {
		return
	}
	fmt.Fprintf(s.p.w, "%s (%v)\n", fmt.Sprintf(format, args...), took.Round(100*time.Millisecond))
}

// snapshotCounts describes what a snapshot holds, for the decode stage.
func snapshotCounts(snap *cluster.Snapshot) string {
	return fmt.Sprintf("%d Services, %d EndpointSlices, %d Nodes, %d ServiceCIDRs",
		len(snap.Services), len(snap.EndpointSlices), len(snap.Nodes), len(snap.ServiceCIDRs))
}

// ruleCount is how many rules (or, in ipvs mode, virtual servers, set
// elements and rules) d holds, for the render stage.
func ruleCount(d *desired) int {
	n := 0
	for _, rs := range d.iptables {
		n += iptablesRules(rs)
	}
	for _, rs := range d.nftables {
		for _, c := range rs.Chains {
			n += len(c.Rules)
		}
		for _, s := range rs.Sets {
			n += len(s.Elements)
		}
	}
	for _, rs := range d.ipvs {
		n += len(rs.VirtualServers) + iptablesRules(rs.IPTables)
		for _, s := range rs.Sets {
			n += len(s.Entries)
		}
	}
	for _, rs := range d.userspace {
		n += iptablesRules(rs.IPTables)
	}
	return n
}

func iptablesRules(rs *ipt.Ruleset) int {
	n := 0
	if rs == nil {
		return 0
	}
	for _, t := range rs.Tables {
		for _, c := range t.Chains {
			n += len(c.Rules)
		}
	}
	return n
}
