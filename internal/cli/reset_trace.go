package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace/kernel"
)

// traceTableWait bounds each exchange with nf_tables while reset looks
// for the tables of killed traces.
const traceTableWait = 5 * time.Second

// traceLeftovers is reset's part for trace --kernel: the tables that
// traces killed before they could delete them left behind, which carry
// the tool's mark (kernel.TableMark); an operator's table of the same
// name carries none and stays.
type traceLeftovers struct {
	removed []string
	err     error
}

// remove deletes them. It runs under the run lock (sync's beforeApply),
// which a running trace --kernel holds: every marked table is then a
// killed trace's. Its error is reported after the reset, which it does
// not stop.
func (l *traceLeftovers) remove(kernelPlan) error {
	l.removed, l.err = kernel.Leftovers(true, traceTableWait)
	return nil
}

// report prints what was removed and returns the error, if any.
func (l *traceLeftovers) report(w io.Writer) error {
	for _, t := range l.removed {
		fmt.Fprintf(w, "Removed table %s, left by a trace --kernel that was killed\n", t)
	}
	if l.err != nil {
		return fmt.Errorf("reset: remove the tables of killed traces (trace --kernel): %w", l.err)
	}
	return nil
}

// dryRun prints, as comments, the tables reset would remove; it takes
// no lock, so a trace running now would keep its own.
func (l *traceLeftovers) dryRun(w io.Writer) error {
	tables, err := kernel.Leftovers(false, traceTableWait)
	for _, t := range tables {
		fmt.Fprintf(w, "# and, unless a trace --kernel holds the lock: delete table %s (left by a killed trace)\n", t)
	}
	if err != nil {
		return fmt.Errorf("reset --dry-run: look for the tables of killed traces (trace --kernel): %w", err)
	}
	return nil
}
