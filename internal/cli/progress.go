package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// progressThreshold is how long a stage must take for its line to be
// printed: a short run stays quiet.
const progressThreshold = time.Second

// progressTick is how often a stage still under way says so.
const progressTick = 5 * time.Second

// progress reports on stderr the stages of a one-shot command (decode,
// render, read the kernel and diff, apply): while one runs, every
// progressTick a line saying what it is doing and for how long, as
// terraform's "Still creating... [10s elapsed]"; when one that took longer
// than progressThreshold ends, one line with its counts. A nil *progress
// reports nothing.
type progress struct {
	w     io.Writer
	clock clock.PassiveClock
	// ticker paces the lines of a stage under way.
	ticker clock.WithTicker
	mu     sync.Mutex // one line at a time
}

// stage is one stage under way; Done ends it.
type stage struct {
	p     *progress
	start time.Time
	stop  chan struct{}
	ended chan struct{}
	once  sync.Once
	// counts, when set (Track), says how far the stage has come, for each
	// line while it runs: "41,200 objects decoded".
	counts atomic.Pointer[func() string]
}

// Track makes every line of the stage under way say how far it has come:
// counts is called at each tick.
func (s *stage) Track(counts func() string) {
	if s != nil {
		s.counts.Store(&counts)
	}
}

// tickLine is the line of a stage still under way after elapsed.
func (s *stage) tickLine(what string, elapsed time.Duration) string {
	if f := s.counts.Load(); f != nil {
		return fmt.Sprintf("still %s... [%s elapsed, %s]\n", what, elapsed, (*f)())
	}
	return fmt.Sprintf("still %s... [%s elapsed]\n", what, elapsed)
}

// reporter returns the command's progress reporter: nil unless --progress
// is on (by default when stderr is a terminal).
func (c *common) reporter() *progress {
	if !c.progress {
		return nil
	}
	clk, tick := c.clock, c.ticker
	if clk == nil {
		clk = clock.RealClock{}
	}
	if tick == nil {
		tick = clock.RealClock{}
	}
	return &progress{w: c.streams.ErrOut, clock: clk, ticker: tick}
}

// Start starts a stage that is doing what ("decoding cluster.yaml
// (110 MB)"), and says so every progressTick until Done.
func (p *progress) Start(what string) *stage {
	if p == nil {
		return nil
	}
	s := &stage{p: p, start: p.clock.Now(), stop: make(chan struct{}), ended: make(chan struct{})}
	t := p.ticker.NewTicker(progressTick)
	go func() {
		defer close(s.ended)
		defer t.Stop()
		for elapsed := progressTick; ; elapsed += progressTick {
			select {
			case <-s.stop:
				return
			case <-t.C():
				p.printf("%s", s.tickLine(what, elapsed))
			}
		}
	}()
	return s
}

// Done ends the stage: if it took longer than progressThreshold, it prints
// what the stage did (format and args, as fmt.Printf) and how long it took.
// No line of the stage follows it.
func (s *stage) Done(format string, args ...any) {
	if s == nil {
		return
	}
	s.End()
	took := s.p.clock.Since(s.start)
	if took <= progressThreshold {
		return
	}
	s.p.printf("%s (%v)\n", fmt.Sprintf(format, args...), took.Round(100*time.Millisecond))
}

// End stops the stage's lines without a last one, as when it failed (the
// error says what happened). Done and End may follow each other.
func (s *stage) End() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		close(s.stop)
		<-s.ended
	})
}

func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
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

// countLabel is n with thousands separators and noun, plural unless n
// is 1: "41,200 objects".
func countLabel(n int64, noun string) string {
	digits := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if n != 1 {
		noun += "s"
	}
	return b.String() + " " + noun
}
