// Package iptablesnft reads the tables that iptables-nft writes into
// nf_tables straight over netlink, and prints them as iptables-nft-save
// v1.8.9 prints them, so that a plan on the nft backend need not run it.
//
// Why: iptables-nft-save is quadratic in its own code. On a node holding
// kube-proxy's rules for 10k Services (110,020 chains and 320,045 rules in
// "ip nat") it used 200 s of CPU, and with the default 8 MiB stack it then
// crashed. The same rules read here, one netlink dump per chain, take
// about 2 s; one dump of the whole table takes 20 s, because the kernel
// starts each batch of a table dump again from its first chain.
//
// iptables-nft encodes a rule partly in native expressions and partly as
// xtables blobs ("match" and "target" expressions that carry the kernel
// structure an iptables extension fills in). This package knows the shapes
// kube-proxy's rules take in all three of the tool's iptables-based modes:
// addresses, interfaces, protocols, ports and marks in native form; the
// comment, conntrack, addrtype, statistic, recent, nfacct, mark, tcp, udp
// and sctp matches; the standard verdicts and the MARK, MASQUERADE, DNAT,
// REDIRECT and REJECT targets. Any other expression, field or flag makes
// Read fail with ErrUnknown, and the caller runs iptables-nft-save: a table
// this package cannot print exactly is never guessed at.
//
// The attributes are read with nfnl, and numbered as golang.org/x/sys/unix
// numbers them. Only Linux has nf_tables: elsewhere Read fails
// (read_other.go) and the rest of the package is not built.
package iptablesnft
