package kernel

import (
	"fmt"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

// TunName is the interface a probe from a pod or from outside arrives
// on: a tun device that lives as long as the check.
const TunName = "svcproxy-trace"

// The check's own table: its chains set the trace flag on the probe at
// the first hook it meets, and note the packet at the last (after every
// translation) when it is forwarded, sent or delivered to the node. Its
// comment starts with TableMark: the check replaces, and reset removes,
// only a table that carries it, never an operator's table of that name.
const (
	TableName = "kubectl-svcproxy-trace"
	TableMark = "kubectl-svcproxy trace --kernel"
	chainPre  = "prerouting"
	chainOut  = "output"
	chainPost = "postrouting"
	chainIn   = "input"
)

// Resolver names the rule behind a trace event (a rule, or a base
// chain's policy) as the evaluator's paths name it; ok is false for an
// event the paths do not hold: a table that is not the proxy's, a return,
// a policy that lets the packet go on.
type Resolver func(ev Event) (step trace.Step, ok bool, err error)

// Outcome is what the kernel did with the probe, read from its events.
type Outcome struct {
	// Verdict is dnat, accept, drop or reject; empty when the packet
	// vanished outside the proxy's rules (see Lost).
	Verdict trace.Verdict
	// Endpoint is the translated destination, "IP:port", for dnat.
	Endpoint string
	// Masquerade is set when the packet left with another source.
	Masquerade bool
	// Path is the proxy's rules that matched, in order.
	Path []trace.Step
	// DecidedBy is the proxy's rule that dropped or rejected it.
	DecidedBy *trace.Step
	// Lost is set when the packet neither left nor reached the node's
	// sockets, and no rule of the proxy dropped it: routing, the
	// reverse-path filter or another table did.
	Lost bool
	// DroppedElsewhere names the rule of another table that dropped it:
	// "FAMILY TABLE CHAIN handle N".
	DroppedElsewhere string
}

// ReadOutcome reads the probe's events: the proxy's rules that matched
// (through rules), the verdict, and the packet as it left.
func ReadOutcome(events []Event, p Probe, rules Resolver) (*Outcome, error) {
	o := &Outcome{}
	delivered := false
	final := p.addrs()
	for _, ev := range events {
		if ev.Family == "inet" && ev.Table == TableName {
			if ev.Chain == chainPost || ev.Chain == chainIn {
				delivered = true
				if s, d, ok := headerAddrs(ev.Network, ev.Transport); ok {
					final = [2]string{s.String(), d.String()}
				}
			}
			continue
		}
		if ev.Type == "return" || ev.Type == "rule" && ev.Handle == 0 {
			continue // the end of a chain: no rule matched there
		}
		step, ok, err := rules(ev)
		if err != nil {
			return nil, err
		}
		if !ok {
			if ev.Verdict == "drop" && ev.Type == "rule" {
				o.DroppedElsewhere = fmt.Sprintf("%s %s %s handle %d", ev.Family, ev.Table, ev.Chain, ev.Handle)
			}
			continue
		}
		o.Path = append(o.Path, step)
		if ev.Verdict == "drop" {
			o.DecidedBy = &step
		}
	}
	o.settle(delivered, p.addrs(), final)
	return o, nil
}

// settle derives the verdict from how the packet ended.
func (o *Outcome) settle(delivered bool, sent, final [2]string) {
	switch {
	case o.DecidedBy != nil:
		o.Verdict = trace.Drop
		if rule := strings.ToLower(o.DecidedBy.Rule); strings.Contains(rule, "reject") {
			o.Verdict = trace.Reject
		}
	case !delivered:
		o.Lost = true
	case final[1] != sent[1]:
		o.Verdict, o.Endpoint = trace.DNAT, final[1]
	default:
		o.Verdict = trace.Accept
	}
	o.Masquerade = delivered && final[0] != sent[0]
}

// addrs is the probe's source and destination as "IP:port".
func (p Probe) addrs() [2]string {
	return [2]string{p.src().String(), p.dst().String()}
}
