package nftables

import (
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// putExpr appends e to the batch as one element of a rule's expression
// list. The expressions that the rules of a table are made of (loads,
// comparisons, immediates, verdicts, numgen, lookups, dnat) are written
// straight into the batch; google/nftables' expr.Marshal builds every
// attribute as a slice of its own and copies it into its parent, which
// was half of the allocations of encoding a new table (6 million at 10k
// Services in the compact layout). The bytes are expr.Marshal's, which
// TestPutExprIsMarshal holds for every rule of the golden tables; any
// other expression, or an option these do not write, goes through
// expr.Marshal.
func (b *Batch) putExpr(e expr.Any) error {
	if b.putFastExpr(e) {
		return nil
	}
	data, err := expr.Marshal(b.fam, e)
	if err != nil {
		return err
	}
	b.enc.Put(unix.NFTA_LIST_ELEM|unix.NLA_F_NESTED, data)
	return nil
}

// putFastExpr writes e if it is one that it knows, and reports whether
// it did.
func (b *Batch) putFastExpr(e expr.Any) bool {
	switch e := e.(type) {
	case *expr.Payload:
		if e.OperationType != expr.PayloadLoad || e.CsumType != 0 {
			return false
		}
		b.exprStart("payload")
		b.enc.PutU32(unix.NFTA_PAYLOAD_DREG, e.DestRegister)
		b.enc.PutU32(unix.NFTA_PAYLOAD_BASE, uint32(e.Base))
		b.enc.PutU32(unix.NFTA_PAYLOAD_OFFSET, e.Offset)
		b.enc.PutU32(unix.NFTA_PAYLOAD_LEN, e.Len)
	case *expr.Meta:
		b.exprStart("meta")
		b.enc.PutU32(unix.NFTA_META_KEY, uint32(e.Key))
		if e.SourceRegister {
			b.enc.PutU32(unix.NFTA_META_SREG, e.Register)
		} else {
			b.enc.PutU32(unix.NFTA_META_DREG, e.Register)
		}
	case *expr.Cmp:
		b.exprStart("cmp")
		b.enc.PutU32(unix.NFTA_CMP_SREG, e.Register)
		b.enc.PutU32(unix.NFTA_CMP_OP, uint32(e.Op))
		b.putDataValue(unix.NFTA_CMP_DATA, e.Data)
	case *expr.Immediate:
		b.exprStart("immediate")
		b.enc.PutU32(unix.NFTA_IMMEDIATE_DREG, e.Register)
		b.putDataValue(unix.NFTA_IMMEDIATE_DATA, e.Data)
	case *expr.Verdict:
		b.putVerdict(e)
	case *expr.Numgen:
		if e.Type != unix.NFT_NG_RANDOM && e.Type != unix.NFT_NG_INCREMENTAL {
			return false
		}
		b.exprStart("numgen")
		b.enc.PutU32(unix.NFTA_NG_DREG, e.Register)
		b.enc.PutU32(unix.NFTA_NG_MODULUS, e.Modulus)
		b.enc.PutU32(unix.NFTA_NG_TYPE, e.Type)
		b.enc.PutU32(unix.NFTA_NG_OFFSET, e.Offset)
	case *expr.Lookup:
		b.putLookup(e)
	case *expr.NAT:
		if e.Random || e.FullyRandom || e.Persistent || e.Prefix {
			return false
		}
		b.putNAT(e)
	default:
		return false
	}
	b.exprEnd()
	return true
}

// exprStart opens a list element, writes the expression's name and
// opens its data; exprEnd closes both.
func (b *Batch) exprStart(name string) {
	// Without NLA_F_NESTED, as encoder.put writes the element for an
	// expression that expr.Marshal encodes.
	b.exprOpen[0] = b.enc.Begin(unix.NFTA_LIST_ELEM)
	b.enc.PutString(unix.NFTA_EXPR_NAME, name)
	b.exprOpen[1] = b.enc.Nested(unix.NFTA_EXPR_DATA)
}

func (b *Batch) exprEnd() {
	b.enc.End(b.exprOpen[1])
	b.enc.End(b.exprOpen[0])
}

// putDataValue writes typ holding one NFTA_DATA_VALUE.
func (b *Batch) putDataValue(typ uint16, v []byte) {
	data := b.enc.Nested(typ)
	b.enc.Put(unix.NFTA_DATA_VALUE, v)
	b.enc.End(data)
}

// putVerdict writes a verdict as the immediate that loads it into the
// verdict register.
func (b *Batch) putVerdict(e *expr.Verdict) {
	b.exprStart("immediate")
	b.enc.PutU32(unix.NFTA_IMMEDIATE_DREG, unix.NFT_REG_VERDICT)
	data := b.enc.Nested(unix.NFTA_IMMEDIATE_DATA)
	verdict := b.enc.Nested(unix.NFTA_DATA_VERDICT)
	b.enc.PutU32(unix.NFTA_VERDICT_CODE, uint32(e.Kind))
	if e.Chain != "" {
		b.enc.PutString(unix.NFTA_VERDICT_CHAIN, e.Chain)
	}
	b.enc.End(verdict)
	b.enc.End(data)
}

func (b *Batch) putLookup(e *expr.Lookup) {
	b.exprStart("lookup")
	if e.SourceRegister != 0 {
		b.enc.PutU32(unix.NFTA_LOOKUP_SREG, e.SourceRegister)
	}
	if e.IsDestRegSet {
		b.enc.PutU32(unix.NFTA_LOOKUP_DREG, e.DestRegister)
	}
	if e.Invert {
		b.enc.PutU32(unix.NFTA_LOOKUP_FLAGS, unix.NFT_LOOKUP_F_INV)
	}
	b.enc.PutString(unix.NFTA_LOOKUP_SET, e.SetName)
	b.enc.PutU32(unix.NFTA_LOOKUP_SET_ID, e.SetID)
}

// putNAT writes a nat expression without the random, persistent and
// prefix flags (which go through expr.Marshal).
func (b *Batch) putNAT(e *expr.NAT) {
	b.exprStart("nat")
	b.enc.PutU32(unix.NFTA_NAT_TYPE, uint32(e.Type))
	b.enc.PutU32(unix.NFTA_NAT_FAMILY, e.Family)
	if e.RegAddrMin != 0 {
		b.enc.PutU32(unix.NFTA_NAT_REG_ADDR_MIN, e.RegAddrMin)
		if e.RegAddrMax != 0 {
			b.enc.PutU32(unix.NFTA_NAT_REG_ADDR_MAX, e.RegAddrMax)
		}
	}
	if e.RegProtoMin != 0 {
		b.enc.PutU32(unix.NFTA_NAT_REG_PROTO_MIN, e.RegProtoMin)
		if e.RegProtoMax != 0 {
			b.enc.PutU32(unix.NFTA_NAT_REG_PROTO_MAX, e.RegProtoMax)
		}
	}
	if e.Specified {
		b.enc.PutU32(unix.NFTA_NAT_FLAGS, expr.NF_NAT_RANGE_PROTO_SPECIFIED)
	}
}
