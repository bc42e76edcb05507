package kernel

// Event is one nf_tables trace event: a rule that matched (Type "rule"),
// the end of a chain the packet went on from (Type "rule" without a
// Handle; "return" in older kernels), or a base chain's policy ("policy",
// with the policy as its Verdict).
type Event struct {
	// ID tells one traced packet's events from another's.
	ID     uint32
	Family string // ip, ip6, inet, ...
	Table  string
	Chain  string
	// Handle is the rule's handle; 0 for a policy or return event.
	Handle uint64
	Type   string
	// Verdict is the rule's verdict: accept, drop, continue, return, or
	// "jump CHAIN" / "goto CHAIN"; empty when the event has none.
	Verdict string
	// Network and Transport are the packet's headers as the chain saw
	// them, carried by the first event of each base chain the packet
	// passes.
	Network, Transport []byte
}
