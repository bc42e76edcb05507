package nfnl

// Kernel constants that golang.org/x/sys/unix (v0.49.0) lacks, named as
// the kernel headers name them. Every other number the users of this
// package send or read is unix's.
const (
	// linux/netfilter/nf_tables.h, enum nft_table_attributes,
	// nft_chain_attributes and nft_bitwise_attributes.
	NFTA_TABLE_USERDATA = 6
	NFTA_CHAIN_USERDATA = 12
	NFTA_BITWISE_OP     = 6

	// linux/netfilter.h: the verdicts of a hook, which nf_tables' verdict
	// codes (unix.NFT_CONTINUE ... unix.NFT_RETURN) extend below zero.
	NF_DROP   = 0
	NF_ACCEPT = 1
	NF_STOLEN = 2
	NF_QUEUE  = 3
	// The bits of a verdict that hold it; a queue verdict carries its
	// queue number above them.
	NF_VERDICT_MASK = 0xff
)
