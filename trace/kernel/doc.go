// Package kernel checks a trace against the kernel's own: it injects the
// traced packet into this network namespace with the nf_tables trace flag
// set (meta nftrace), collects the kernel's trace events (one for every
// rule that matched, in order, from the nftables tables and from
// iptables-nft's, which are nf_tables tables too) and compares them with
// what the evaluator predicted.
//
// The pieces: Probe builds the packet (packet.go), Event is a trace event
// (event.go, decoded on Linux by decode_linux.go), Outcome reads what the
// kernel did from the events (outcome.go), Compare holds it against a
// trace.Result (compare.go); on Linux, Run arms the trace table, listens,
// injects and tidies up.
package kernel
