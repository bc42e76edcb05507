package cli

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
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
		return nil, err
	}
	out, err := kernel.ReadOutcome(events, p, d.kernelRules(ps))
	if err != nil {
		return nil, err
	}
	c := kernel.Compare(r, out)
	c.SourcePort = p.SrcPort
	return c, nil
}

// kernelRules names the rules of the kernel's trace events from the
// rules read from the kernel.
func (d *desired) kernelRules(ps *kernel.Positions) kernel.Resolver {
	return func(ev kernel.Event) (trace.Step, bool, error) {
		if ev.Type != "rule" && (ev.Type != "policy" || ev.Verdict != "drop") {
			return trace.Step{}, false, nil
		}
		table, rules, policy, ok := d.kernelChain(ev)
		if !ok {
			return trace.Step{}, false, nil
		}
		step := trace.Step{Table: table, Chain: ev.Chain, Rule: policy}
		if ev.Type == "policy" {
			return step, true, nil
		}
		i, err := ps.Of(ev.Family, ev.Table, ev.Chain, ev.Handle)
		if err != nil {
			return step, false, err
		}
		if i < 0 || i >= len(rules) {
			step.Rule = fmt.Sprintf("(rule handle %d, not among the rules read: the table changed during the trace)", ev.Handle)
		} else {
			step.Rule = rules[i]
		}
		return step, true, nil
	}
}

// kernelChain finds the chain of an event among the proxy's rules: its
// table as the trace names it, its rules, and how a policy drop is shown.
func (d *desired) kernelChain(ev kernel.Event) (table string, rules []string, policy string, ok bool) {
	if d.mode == ModeNFTables {
		for _, rs := range d.nftables {
			if string(rs.Family) != ev.Family || rs.Table != ev.Table {
				continue
			}
			if ch := rs.Chain(ev.Chain); ch != nil {
				return ev.Family + " " + ev.Table, strs(ch.Rules), "policy drop", true
			}
		}
		return "", nil, "", false
	}
	fam := map[string]nodetable.Family{"ip": nodetable.IPv4, "ip6": nodetable.IPv6}[ev.Family]
	for _, rs := range d.iptables {
		if rs.Family != fam || fam == "" {
			continue
		}
		if t := rs.Table(ipt.TableName(ev.Table)); t != nil {
			if ch := t.Chain(ev.Chain); ch != nil {
				return ev.Table, strs(ch.Rules), "policy DROP", true
			}
		}
	}
	return "", nil, "", false
}

func strs[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = string(s)
	}
	return out
}
