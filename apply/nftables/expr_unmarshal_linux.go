package nftables

import (
	"fmt"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

// unknownExpr stands for an expression this package does not decode (or
// could not parse); the decompiler turns a rule holding one into a text
// that no rendered rule can equal.
type unknownExpr struct {
	expr.Any
	name   string
	reason string
}

// unmarshalExprs decodes a rule's NFTA_RULE_EXPRESSIONS. Unlike
// google/nftables v0.3.0's own rule reader, which silently skips an
// expression kind it does not know (so "ip daddr 10.0.0.1 last drop"
// would read back as "ip daddr 10.0.0.1 drop"), it keeps a placeholder for
// every expression, so that no hand edit can hide.
func unmarshalExprs(family byte, b []byte) ([]expr.Any, error) {
	var out []expr.Any
	err := nfnl.Walk(b, func(typ uint16, v []byte) error {
		if typ != unix.NFTA_LIST_ELEM {
			return nil
		}
		out = append(out, unmarshalExpr(family, v))
		return nil
	})
	return out, err
}

func unmarshalExpr(family byte, b []byte) (out expr.Any) {
	var name string
	// google/nftables v0.3.0 indexes some attributes without checking their
	// length (a verdict's chain name, for one) and panics on a malformed
	// one: what it cannot decode reads as unsupported instead.
	defer func() {
		if r := recover(); r != nil {
			out = &unknownExpr{name: name, reason: fmt.Sprintf("undecodable: %v", r)}
		}
	}()
	var data []byte
	_ = nfnl.Walk(b, func(typ uint16, v []byte) error {
		switch typ {
		case unix.NFTA_EXPR_NAME:
			name = nfnl.CString(v)
		case unix.NFTA_EXPR_DATA:
			data = v
		}
		return nil
	})
	e := newExpr(name)
	if e == nil {
		return &unknownExpr{name: name, reason: "(an expression kind this codec does not know)"}
	}
	if err := expr.Unmarshal(family, data, e); err != nil {
		return &unknownExpr{name: name, reason: fmt.Sprintf("undecodable: %v", err)}
	}
	// A verdict is an immediate that loads the verdict register.
	if imm, ok := e.(*expr.Immediate); ok && imm.Register == unix.NFT_REG_VERDICT && len(imm.Data) == 0 {
		v := &expr.Verdict{}
		if err := expr.Unmarshal(family, data, v); err != nil {
			return &unknownExpr{name: name, reason: fmt.Sprintf("undecodable verdict: %v", err)}
		}
		return v
	}
	return e
}

// newExpr returns an empty expression of the kinds the decompiler knows,
// plus a few common ones that it prints as unsupported with their fields.
func newExpr(name string) expr.Any {
	switch name {
	case "payload":
		return &expr.Payload{}
	case "meta":
		return &expr.Meta{}
	case "cmp":
		return &expr.Cmp{}
	case "bitwise":
		return &expr.Bitwise{}
	case "lookup":
		return &expr.Lookup{}
	case "immediate":
		return &expr.Immediate{}
	case "ct":
		return &expr.Ct{}
	case "fib":
		return &expr.Fib{}
	case "nat":
		return &expr.NAT{}
	case "masq":
		return &expr.Masq{}
	case "numgen":
		return &expr.Numgen{}
	case "dynset":
		return &expr.Dynset{}
	case "reject":
		return &expr.Reject{}
	case "counter":
		return &expr.Counter{}
	case "log":
		return &expr.Log{}
	case "range":
		return &expr.Range{}
	case "limit":
		return &expr.Limit{}
	}
	return nil
}
