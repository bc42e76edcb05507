package cli

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace/kernel"
)

// ErrKernelDisagrees is returned by trace --kernel when the kernel did not
// do what the trace predicts; it maps to exit code 1.
var ErrKernelDisagrees = fmt.Errorf("the kernel disagrees with the trace: %w", ErrChanges)

// validateKernel checks --kernel against the other flags.
func (o *TraceOptions) validateKernel() error {
	switch {
	case !o.kernel:
		return nil
	case !o.live:
		return errors.New("--kernel checks the trace of this node's kernel rules: it needs --live")
	case o.service != "":
		return errors.New("--kernel injects one packet: it takes --from and --to, not --service")
	case o.proxy.settings.mode != ModeNFTables && o.proxy.settings.mode != ModeIPTables:
		return fmt.Errorf("--kernel reads nf_tables trace events: it works in the nftables and iptables modes, not %s", o.proxy.settings.mode)
	}
	return nil
}

// kernelCheck injects the traced packet into this node's kernel and holds
// the kernel's trace against the evaluator's result r.
func (o *TraceOptions) kernelCheck(d *desired, via trace.Via, r *trace.Result) (*kernel.Check, error) {
	if o.liveBackend == "iptables-legacy" {
		return nil, errors.New("--kernel reads nf_tables trace events: this node's iptables rules are in the legacy backend, which has none")
	}
	p, err := kernel.NewProbe(o.packet)
	if err != nil {
		return nil, err
	}
	ps, err := kernel.NewPositions()
	if err != nil {
		return nil, err
	}
	events, err := kernel.Run(p, via)
	if err != nil {
		return nil, fmt.Errorf("trace --kernel: %w", err)
	}
	out, err := kernel.ReadOutcome(events, p, kernel.RulesOf(d.nftables, d.iptables, ps))
	if err != nil {
		return nil, fmt.Errorf("trace --kernel: %w", err)
	}
	c := kernel.Compare(r, out)
	c.SourcePort = p.SrcPort
	return c, nil
}
