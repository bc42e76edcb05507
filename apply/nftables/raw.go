package nftables

// The raw reads (read_raw_linux.go) serve readers of tables that another
// tool writes in its own encoding (iptables-nft's xtables tables): the
// chains and each rule's expressions, undecoded, so that such a reader can
// refuse every shape it does not know rather than see it through this
// package's decompiler.

// RawChain is a chain as the kernel lists it.
type RawChain struct {
	Name string
	// Base is set for a base chain, which has the hook fields below.
	Base     bool
	Hook     uint32 // NF_INET_* hook number
	Priority int32
	Type     string // "filter", "nat", "route"
	Accept   bool   // the policy is accept (the kernel allows only accept and drop)
	Packets  uint64 // the base chain's counters
	Bytes    uint64
}

// RawRule is one rule: its expressions, and its userdata (NFTA_RULE_USERDATA)
// if it has any.
type RawRule struct {
	Exprs    []RawExpr
	Userdata []byte
}

// RawExpr is one expression of a rule: its kind and its NFTA_EXPR_DATA.
type RawExpr struct {
	Name string
	Data []byte
}
