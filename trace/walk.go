package trace

// Evaluator is one mode's ruleset, ready to trace.
type Evaluator interface {
	// Mode names the mode ("iptables", "nftables", ...).
	Mode() string
	// Hook runs st through every chain the ruleset attaches to h, in
	// priority order, and returns the states that come out: st itself,
	// or the branches it forked into. A state a rule dropped or rejected
	// comes out Ended. An error names a rule the evaluator cannot follow.
	Hook(h Hook, st *State) ([]*State, error)
}

// Run traces p, entering at e, through ev on node n. A packet from a pod
// or from outside meets PREROUTING, then INPUT when its (translated)
// destination is one of the node's addresses, else FORWARD and
// POSTROUTING; a packet the node sends meets OUTPUT and POSTROUTING, and
// when it is delivered to the node itself it comes back over loopback
// through PREROUTING (all but its nat chains: see State.Looped) and INPUT.
func Run(ev Evaluator, n *Node, p Packet, e Entry) (*Result, error) {
	states := []*State{NewState(p, e)}
	var err error
	first := []Hook{Prerouting}
	if e.Via == ViaNode {
		first = []Hook{Output, Postrouting}
	}
	for _, h := range first {
		if states, err = runHook(ev, h, states); err != nil {
			return nil, err
		}
	}
	var leaves []*State
	for _, st := range states {
		var route []Hook
		switch {
		case st.Ended():
		case n.IsLocal(st.Packet.Dst) && e.Via == ViaNode:
			st.Looped = true
			route = []Hook{Prerouting, Input}
		case n.IsLocal(st.Packet.Dst):
			route = []Hook{Input}
		case e.Via != ViaNode:
			route = []Hook{Forward, Postrouting}
		}
		out := []*State{st}
		for _, h := range route {
			if out, err = runHook(ev, h, out); err != nil {
				return nil, err
			}
		}
		leaves = append(leaves, out...)
	}
	r := Combine(leaves)
	r.Mode, r.Packet, r.Entry = ev.Mode(), p, e
	return r, nil
}

func runHook(ev Evaluator, h Hook, states []*State) ([]*State, error) {
	var out []*State
	for _, st := range states {
		if st.Ended() {
			out = append(out, st)
			continue
		}
		st.Hook = h
		next, err := ev.Hook(h, st)
		if err != nil {
			return nil, err
		}
		out = append(out, next...)
	}
	return out, nil
}
