// Package nfnl is the one vocabulary of nfnetlink, the netlink family of
// netfilter, for the packages that talk to nf_tables: apply/nftables (its
// codec and connection), apply/iptablesnft (iptables-nft's rules read
// back) and trace/kernel (nf_tables trace events).
//
// It splits a datagram into netlink messages, decodes an acknowledgement
// or error, walks and encodes attributes, and reads the values nf_tables
// puts in them: NUL-terminated strings, big-endian integers, nested data
// values and verdicts. The bytes come from the kernel, or from whoever
// could write into a table, so every reader here checks each length it
// uses: a truncated or torn message gives an error, never a panic.
//
// The kernel's numbers come from golang.org/x/sys/unix. The nf_tables
// attributes and verdicts that unix lacks are in consts_linux.go, spelt as
// the kernel headers spell them, so that switching to unix once it has
// them is a change of package name.
//
// Netlink is Linux's: the package is empty on other systems, where
// nothing that imports it is built. It imports only the standard library
// and golang.org/x/sys/unix, and no package of the module (test/archtest).
package nfnl
