// Package nftgen reads nf_tables' ruleset generation ID, which the kernel
// increments on every committed nf_tables transaction in a network
// namespace, whoever makes it. An unchanged ID means an unchanged ruleset,
// so a copy read at that ID is still exact.
package nftgen
