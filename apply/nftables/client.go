package nftables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Plan is one table's desired state, the live state read from the kernel,
// and the changes between them.
type Plan struct {
	Family nft.Family `json:"family"`
	// Live is the table as the kernel held it; nil when it had none.
	Live *nft.Ruleset `json:"-"`
	// Desired is the rendered table; nil for a reset. Changes is always
	// diff.NFTables(Desired, Live): the cache builds the state an apply
	// leaves from both.
	Desired *nft.Ruleset            `json:"-"`
	Changes *diff.NFTablesChangeSet `json:"changes"`
	// Pending lists the stale chains that Apply emptied but could not
	// delete yet, because the kernel still counted a reference to them
	// (kernels before 6.2 release a chain's reference a moment after the
	// map element that pointed to it is deleted). They are harmless, and
	// the next apply deletes them. Set by Apply.
	Pending []string `json:"pendingChains,omitempty"`
	// Ops counts the netlink operations Apply sent for this table, in all
	// its transactions: the size of the change as the kernel sees it.
	Ops int `json:"ops,omitempty"`
	// gen is the nf_tables generation Live is exact at, when known.
	gen      uint32
	genKnown bool
}

// Client reads kube-proxy's nftables tables and applies change sets to
// them through one netlink connection.
type Client struct {
	conn kernel
	// own is the table the client may read and write, in which families
	// (render.NFTablesOwnership): a desired table of another name or
	// family is refused.
	own *nft.Ownership
	// Cache turns on the generation cache (client_cache.go): the state of
	// each table after a read or an apply is kept with the nf_tables
	// generation it is exact at, and a Plan at that same generation uses it
	// instead of reading the table. For clients that live across syncs.
	Cache bool
	// CacheDir, when set, turns the cache on and also keeps it in files
	// in CacheDir, for the next run of the command. Each file names the
	// boot, network namespace and generation it is exact for, and serves
	// no other. Without Cache and CacheDir, every Plan reads the kernel.
	CacheDir *statefile.Dir
	// DeferFiles writes cache files only when SaveCache is called, not
	// after every apply: for a long-running client.
	DeferFiles bool
	// CacheWarn receives each failure to write a cache file (a full,
	// read-only or unwritable state directory). The file only saves the
	// next run a read of the kernel, so the client goes on without it
	// and leaves the warning to the caller; nil drops it.
	CacheWarn func(error)
	cache     map[tableKey]cacheEntry
	commits   int // transactions committed, for the cache
	// StaleChainWait is how long Apply keeps retrying the deletion of
	// stale chains that the kernel reports busy (EBUSY) before it leaves
	// them for the next apply. kube-proxy waits at least a second.
	StaleChainWait time.Duration
}

// DefaultStaleChainWait is NewClient's StaleChainWait.
const DefaultStaleChainWait = 1500 * time.Millisecond

// NewClient opens a netlink connection to nf_tables for the tables own
// names. The connection stays
// in the network namespace of the calling thread for its whole life, so
// call it in the namespace to manage (netlab.NS.Do in tests). Close it
// when done.
func NewClient(own *nft.Ownership) (*Client, error) {
	if own == nil || own.Table == "" {
		return nil, errors.New("nftables client: no ownership policy given")
	}
	conn, err := Open()
	if err != nil {
		return nil, err
	}
	return newClient(conn, own), nil
}

// kernel is what a Client needs of nf_tables in one network namespace: a
// consistent read of one table, the generation ID and the namespace's
// cookie (for the cache), and one transaction, applied entirely or not at
// all. *Conn is the netlink one. The client's decisions (what to read,
// what the cache trusts, which transactions in which order, what to undo)
// are also tested against an in-memory one, without root.
type kernel interface {
	ReadTable(family nft.Family, table string) (*nft.Ruleset, error)
	generation() (uint32, error)
	netnsCookie() (uint64, error)
	// commit sends tx as one transaction and returns the number of
	// netlink objects it held (Batch.Ops). When the kernel refuses it (a
	// *TransactionError), nothing of tx was applied.
	commit(tx transaction) (ops int, err error)
	Close() error
}

func newClient(k kernel, own *nft.Ownership) *Client {
	return &Client{conn: k, own: own, StaleChainWait: DefaultStaleChainWait, cache: map[tableKey]cacheEntry{}}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Read returns the named table of one family, or nil when the kernel has
// no such table.
func (c *Client) Read(family nft.Family, table string) (*nft.Ruleset, error) {
	rs, err := c.conn.ReadTable(family, table)
	if err != nil {
		return nil, fmt.Errorf("read table %s %s: %w", family, table, err)
	}
	return rs, nil
}

// Plan reads the kernel's table for each desired table (or takes it from
// the cache) and computes the changes. The plans' Live values may be
// shared with the cache: do not modify them.
func (c *Client) Plan(ctx context.Context, desired []*nft.Ruleset) ([]*Plan, error) {
	var plans []*Plan
	for _, d := range desired {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.checkOwned(d.Family, d.Table); err != nil {
			return nil, err
		}
		// Rules are nft text until they are compiled: one that the text
		// cannot hold as written (an interface name with a quote) is
		// refused here, before the kernel or the --dry-run script sees it.
		if err := d.ValidateRules(); err != nil {
			return nil, fmt.Errorf("refusing to write the rendered rules: %w", err)
		}
		live, gen, known, err := c.readLive(d.Family, d.Table)
		if err != nil {
			return nil, err
		}
		plans = append(plans, &Plan{Family: d.Family, Live: live, Desired: d, Changes: diff.NFTables(d, live), gen: gen, genKnown: known})
	}
	return plans, nil
}

// checkOwned refuses a table that is not the mode's.
func (c *Client) checkOwned(f nft.Family, table string) error {
	if table != c.own.Table || !slices.Contains(c.own.Families, f) {
		return fmt.Errorf("table %s %s is not the nftables mode's (%s in %v): refusing to touch it", f, table, c.own.Table, c.own.Families)
	}
	return nil
}

// PlanReset plans the deletion of kube-proxy's table in each family: the
// `reset` of nftables mode. A family without the table has nothing to do.
// Other tables are never touched.
func (c *Client) PlanReset(ctx context.Context, families []nft.Family) ([]*Plan, error) {
	var plans []*Plan
	for _, f := range families {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.checkOwned(f, c.own.Table); err != nil {
			return nil, err
		}
		live, gen, known, err := c.readLive(f, c.own.Table)
		if err != nil {
			return nil, err
		}
		cs := diff.DeleteNFTables(live)
		cs.Family, cs.Name = f, c.own.Table
		plans = append(plans, &Plan{Family: f, Live: live, Changes: cs, gen: gen, genKnown: known})
	}
	return plans, nil
}
