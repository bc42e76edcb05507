package nftables

import (
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
)

const maxDepth = 64

// run walks a chain and returns how each branch leaves it: kCont when it
// falls off the end or returns, kAccept, kDrop or kReject.
func (ev *Evaluator) run(chain string, st *trace.State, depth int) ([]res, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s chain %s: chains nest deeper than %d (a loop?)", ev.table, chain, maxDepth)
	}
	// live and cont swap their arrays: see trace/iptables.
	live, cont := make([]*trace.State, 1, 4), make([]*trace.State, 0, 4)
	live[0] = st
	var out []res
	for _, r := range ev.chains[chain] {
		if len(live) == 0 {
			break
		}
		cont = cont[:0]
		for _, s := range live {
			rs, err := ev.rule(chain, r, s, depth)
			if err != nil {
				return nil, err
			}
			for _, x := range rs {
				switch x.kind {
				case kCont:
					cont = append(cont, x.st)
				case kReturn:
					out = append(out, res{x.st, kCont, ""})
				default:
					out = append(out, x)
				}
			}
		}
		live, cont = cont, live
	}
	for _, s := range live {
		out = append(out, res{s, kCont, ""})
	}
	return out, nil
}

// rule evaluates one rule on st: its expressions in order, then the
// verdict it reached. kCont means: go on with the next rule.
func (ev *Evaluator) rule(chain string, r *rule, st *trace.State, depth int) ([]res, error) {
	live := []*trace.State{st}
	var done []res
	for _, o := range r.ops {
		var next []*trace.State
		for _, s := range live {
			for _, x := range o(s) {
				switch x.kind {
				case kCont:
					next = append(next, x.st)
				case kNoMatch:
					done = append(done, res{x.st, kCont, ""})
				default:
					x.st.Record(ev.table, chain, r.text)
					done = append(done, x)
				}
			}
		}
		live = next
	}
	var out []res
	for _, s := range live {
		s.Record(ev.table, chain, r.text) // matched, no verdict
		out = append(out, res{s, kCont, ""})
	}
	for _, x := range done {
		rs, err := ev.verdict(x, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// verdict carries out a rule's verdict.
func (ev *Evaluator) verdict(x res, depth int) ([]res, error) {
	switch x.kind {
	case kDrop:
		x.st.End(trace.Drop)
	case kReject:
		x.st.End(trace.Reject)
	case kJump, kGoto:
		sub, err := ev.run(x.chain, x.st, depth+1)
		if err != nil {
			return nil, err
		}
		if x.kind == kGoto {
			// What falls off a goto's chain returns from this one too.
			for i := range sub {
				if sub[i].kind == kCont {
					sub[i].kind = kReturn
				}
			}
		}
		return sub, nil
	case kReturn:
		return []res{x}, nil
	}
	return []res{x}, nil
}
