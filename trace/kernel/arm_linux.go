package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Priorities of the check's chains: the flag is set before anything else
// sees the packet (raw is -300, connection tracking -200), and the packet
// is noted after everything, source NAT included (100).
const (
	priorityFirst = -350
	priorityLast  = 500
)

// arm creates the check's table (see claimTable): a rule at the first
// hook that sets the trace flag on the probe, and a rule at the last
// hooks that every traced packet matches. Every exchange with the kernel
// is bounded by wait.
func arm(p Probe, wait time.Duration) (ownTable, error) {
	nc, err := dialNF(wait)
	if err != nil {
		return ownTable{}, err
	}
	defer nc.close()
	own, err := nc.claimTable()
	if err != nil {
		return ownTable{}, err
	}
	if err := addChains(p, wait); err != nil {
		_ = nc.deleteTable(own)
		return ownTable{}, err
	}
	return own, nil
}

// addChains adds the check's chains and rules to its table, in one
// transaction whose answer is awaited at most wait.
func addChains(p Probe, wait time.Duration) error {
	c, err := nftables.New(bounded(wait))
	if err != nil {
		return fmt.Errorf("nf_tables: %w", err)
	}
	t := &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
	for _, ch := range []struct {
		name  string
		hook  *nftables.ChainHook
		prio  int32
		exprs []expr.Any
	}{
		{chainPre, nftables.ChainHookPrerouting, priorityFirst, p.markExprs()},
		{chainOut, nftables.ChainHookOutput, priorityFirst, p.markExprs()},
		{chainPost, nftables.ChainHookPostrouting, priorityLast, []expr.Any{&expr.Counter{}}},
		{chainIn, nftables.ChainHookInput, priorityLast, []expr.Any{&expr.Counter{}}},
	} {
		prio := nftables.ChainPriority(ch.prio)
		chain := c.AddChain(&nftables.Chain{Name: ch.name, Table: t, Type: nftables.ChainTypeFilter, Hooknum: ch.hook, Priority: &prio})
		c.AddRule(&nftables.Rule{Table: t, Chain: chain, Exprs: ch.exprs})
	}
	if err := c.Flush(); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("nf_tables did not answer within %v", wait)
		}
		return fmt.Errorf("add the chains of table inet %s: %w", TableName, err)
	}
	return nil
}

// bounded makes every exchange of a google/nftables connection end
// within wait: each opens its own netlink socket, with that deadline.
func bounded(wait time.Duration) nftables.ConnOption {
	return nftables.WithSockOptions(func(c *netlink.Conn) error { return c.SetDeadline(time.Now().Add(wait)) })
}

// disarm deletes the check's table, by its handle.
func disarm(own ownTable, wait time.Duration) error {
	c, err := dialNF(wait)
	if err != nil {
		return err
	}
	defer c.close()
	return c.deleteTable(own)
}

// markExprs match the probe's five-tuple and set the trace flag.
func (p Probe) markExprs() []expr.Any {
	nfproto, saddr, daddr := byte(unix.NFPROTO_IPV4), uint32(12), uint32(16)
	if p.Src.Is6() {
		nfproto, saddr, daddr = unix.NFPROTO_IPV6, 8, 24
	}
	port := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	var out []expr.Any
	match := func(load expr.Any, want []byte) {
		out = append(out, load, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: want})
	}
	match(&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, []byte{nfproto})
	match(&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, []byte{p.proto()})
	match(netPayload(saddr, len(p.Src.AsSlice())), p.Src.AsSlice())
	match(netPayload(daddr, len(p.Dst.AsSlice())), p.Dst.AsSlice())
	match(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 2}, port(p.SrcPort))
	match(&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}, port(p.Port))
	return append(out,
		&expr.Immediate{Register: 1, Data: []byte{1}},
		&expr.Meta{Key: expr.MetaKeyNFTRACE, SourceRegister: true, Register: 1})
}

func netPayload(offset uint32, n int) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: uint32(n)}
}
