package nftables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
)

// Apply runs the plans: one atomic transaction per table with all of its
// changes, and then, for each table, one more that deletes its stale
// chains. If a table's transaction fails, the kernel leaves that table as
// it was, and the tables already written are restored to what Plan read,
// so the kernel ends either fully applied or as it was. Stale chains that
// stay busy longer than StaleChainWait are left, empty, in Plan.Pending.
func (c *Client) Apply(ctx context.Context, plans []*Plan) error {
	commits := c.commits
	var done []*Plan
	var stale []transaction
	for _, p := range plans {
		txs := transactions(p)
		if len(txs) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return c.fail(ctx, p, done, err)
		}
		ops, err := c.commit(txs[0])
		if err != nil {
			return c.fail(ctx, p, done, err)
		}
		p.Ops = ops
		done = append(done, p)
		stale = append(stale, transaction{})
		if len(txs) > 1 {
			stale[len(stale)-1] = txs[1]
		}
	}
	var errs []error
	for i, p := range done {
		if len(stale[i].ops) == 0 {
			continue
		}
		pending, ops, err := c.deleteStaleChains(ctx, stale[i])
		p.Pending, p.Ops = pending, p.Ops+ops
		if err != nil {
			errs = append(errs, fmt.Errorf("table %s %s: the changes are applied, but deleting the stale chains failed: %w", p.Family, p.Changes.Name, err))
		}
	}
	if len(errs) > 0 {
		c.forget(plans)
		return errors.Join(errs...)
	}
	c.remember(plans, c.commits-commits)
	return nil
}

func (c *Client) fail(ctx context.Context, p *Plan, done []*Plan, err error) error {
	c.forget(append([]*Plan{p}, done...))
	ae := &ApplyError{Family: string(p.Family), Table: p.Changes.Name, Err: err}
	if len(done) > 0 {
		ae.Rollback = c.undo(context.WithoutCancel(ctx), done)
		ae.RollbackOK = ae.Rollback == nil
	}
	return ae
}

// commit sends one transaction and counts it for the cache.
func (c *Client) commit(tx transaction) (int, error) {
	ops, err := c.conn.commit(tx)
	if err != nil {
		return 0, err
	}
	c.commits++
	return ops, nil
}

// commit sends one transaction as one batch and returns the number of
// operations it held. An operation that cannot be encoded stops it before
// anything reaches the kernel.
func (c *Conn) commit(tx transaction) (int, error) {
	b, err := encodeTransaction(c, tx)
	if err != nil {
		return 0, err
	}
	defer b.Release()
	ops := b.Ops()
	if err := b.Commit(); err != nil {
		return 0, err
	}
	return ops, nil
}

// encodeTransaction queues tx's operations in a batch on c, which the
// caller must Release.
func encodeTransaction(c *Conn, tx transaction) (*Batch, error) {
	b := c.NewBatch(tx.family, tx.table)
	b.Grow(estimateBatchBytes(tx.ops))
	if len(tx.declare) > 0 {
		b.Declare(tx.declare...)
	}
	if err := queueOps(b, tx.ops); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// estimateBatchBytes is a little more than ops take as netlink messages
// (kube-proxy's rules take 300 to 400 bytes, a set element under 100), so
// that the batch of a whole table is allocated once. Grown by append
// instead, the 42 MB batch of 10k Services in the compact layout was
// copied over and over, for about a second of CPU.
func estimateBatchBytes(ops []op) int {
	n := 0
	for _, o := range ops {
		n += 400 + 100*len(o.elems)
	}
	return n
}

// queueOps queues ops in order, stopping at the first that cannot be
// encoded. The rules of a large batch are compiled on another goroutine
// meanwhile (see compileAhead).
func queueOps(b *Batch, ops []op) error {
	ahead := compileAhead(b.fam, ops)
	defer ahead.done()
	for i, o := range ops {
		var err error
		if ahead != nil && o.kind == opAddRule {
			pre := ahead.get(i)
			err = b.addRule(o.name, o.rule, pre.rule, pre.err)
		} else {
			err = addOp(b, o)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// addOp queues one operation.
func addOp(b *Batch, o op) error {
	switch o.kind {
	case opAddTable:
		b.AddTable(o.comment)
	case opDeleteTable:
		b.DeleteTable()
	case opAddSet:
		return b.AddSet(o.set)
	case opDeleteSet:
		b.DeleteSet(o.name)
	case opAddElements:
		return b.AddElements(o.name, o.elems)
	case opDeleteElements:
		return b.DeleteElements(o.name, o.elems)
	case opAddChain:
		b.AddChain(o.chain)
	case opFlushChain:
		b.FlushChain(o.name)
	case opDeleteChain:
		b.DeleteChain(o.name)
	case opAddRule:
		return b.AddRule(o.name, o.rule)
	}
	return nil
}

// staleRetryFirst is the first pause before stale chains are tried again;
// each pause doubles.
const staleRetryFirst = 50 * time.Millisecond

// deleteStaleChains deletes the chains of tx (delete-chain operations
// only), retrying while the kernel reports one busy, for up to
// StaleChainWait. Then it deletes them one by one and returns those still
// busy. A chain already gone counts as deleted.
func (c *Client) deleteStaleChains(ctx context.Context, tx transaction) (pending []string, ops int, err error) {
	deadline := time.Now().Add(c.StaleChainWait)
	pause := staleRetryFirst
	for {
		n, err := c.commit(tx)
		if err == nil {
			return nil, n, nil
		}
		if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOENT) {
			return nil, 0, err
		}
		if errors.Is(err, unix.ENOENT) || time.Now().Add(pause).After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
	}
	var errs []error
	for _, o := range tx.ops {
		n, err := c.commit(transaction{family: tx.family, table: tx.table, ops: []op{o}})
		switch {
		case err == nil:
			ops += n
		case errors.Is(err, unix.ENOENT):
		case errors.Is(err, unix.EBUSY):
			pending = append(pending, o.name)
		default:
			errs = append(errs, fmt.Errorf("chain %s: %w", o.name, err))
		}
	}
	return pending, ops, errors.Join(errs...)
}

// undo puts each table written by an apply back as Plan read it: it
// re-reads the table and applies the changes that lead back to Live.
func (c *Client) undo(ctx context.Context, done []*Plan) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		p := done[i]
		now, err := c.Read(p.Family, p.Changes.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		back := &Plan{Family: p.Family, Live: now, Desired: p.Live}
		if p.Live == nil {
			back.Changes = diff.DeleteNFTables(now)
		} else {
			back.Changes = diff.NFTables(p.Live, now)
		}
		if err := c.Apply(ctx, []*Plan{back}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
