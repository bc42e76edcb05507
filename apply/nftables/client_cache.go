package nftables

import (
	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Reading a large table back costs far more than the small changes a sync
// usually makes (the kernel answers the element dump of each of 10k
// anonymous maps separately). nf_tables numbers every committed
// transaction in a network namespace (the generation ID), so a table read,
// or computed from a read and the transactions applied since, at
// generation G is still exact while the generation is G. The cache keeps
// that state per table in memory (Client.Cache) and, with Client.CacheDir,
// in a file that serves the next run of the command too. Any commit by
// anyone (nft, iptables-nft, another tool) moves the generation and
// invalidates it.
//
// The file (client_cache_file.go) holds the table in the tool's own
// format (cache_codec.go), in a statefile envelope: at 10k Services it
// decodes in about 7 ms, where parsing the nft listing would take seconds.

type tableKey struct {
	family nft.Family
	table  string
}

// cacheEntry is a table's state (nil: no such table) at generation gen;
// unsaved says that DeferFiles held back its file.
type cacheEntry struct {
	gen     uint32
	rs      *nft.Ruleset
	unsaved bool
}

// readLive returns the table and, when known, the generation it is exact
// at; from the cache when the generation has not moved.
func (c *Client) readLive(family nft.Family, table string) (rs *nft.Ruleset, gen uint32, known bool, err error) {
	if !c.caching() {
		rs, err := c.Read(family, table)
		return rs, 0, false, err
	}
	key := tableKey{family, table}
	gen, err = c.conn.generation()
	if err != nil {
		rs, err := c.Read(family, table)
		return rs, 0, false, err
	}
	if rs, ok := c.cached(key, gen); ok {
		return rs, gen, true, nil
	}
	if rs, err = c.Read(family, table); err != nil {
		return nil, 0, false, err
	}
	if after, err := c.conn.generation(); err == nil && after == gen {
		c.store(key, gen, rs)
		return rs, gen, true, nil
	}
	return rs, 0, false, nil
}

func (c *Client) caching() bool { return c.Cache || c.CacheDir != nil }

// cached returns the state of key at generation gen, if known.
func (c *Client) cached(key tableKey, gen uint32) (*nft.Ruleset, bool) {
	if e, ok := c.cache[key]; ok && e.gen == gen {
		return e.rs, true
	}
	rs, ok := c.loadFile(key, gen)
	if ok {
		c.cache[key] = cacheEntry{gen: gen, rs: rs}
	}
	return rs, ok
}

// store remembers rs as key's state at generation gen, and writes its file
// unless DeferFiles holds it back for SaveCache.
func (c *Client) store(key tableKey, gen uint32, rs *nft.Ruleset) {
	c.cache[key] = cacheEntry{gen: gen, rs: rs, unsaved: c.DeferFiles}
	if !c.DeferFiles {
		c.storeFile(key, gen, rs)
	}
}

// SaveCache writes the files that DeferFiles held back, for the states
// that are still the kernel's; one the generation has left behind could
// serve nothing and is dropped. A file it cannot write goes to
// CacheWarn, as after an apply. Encoding a 10k-Service table takes about
// 70 ms, more than a one-endpoint apply, so a long-running client calls
// this when it is idle rather than after every apply.
func (c *Client) SaveCache() error {
	if c.CacheDir == nil {
		return nil
	}
	gen, err := c.conn.generation()
	if err != nil {
		return err
	}
	for key, e := range c.cache {
		if !e.unsaved {
			continue
		}
		e.unsaved = false
		c.cache[key] = e
		if e.gen == gen {
			c.storeFile(key, gen, e.rs)
		}
	}
	return nil
}

// forget drops what the cache knows about the plans' tables.
func (c *Client) forget(plans []*Plan) {
	for _, p := range plans {
		key := tableKey{p.Family, p.Changes.Name}
		delete(c.cache, key)
		c.removeFile(key)
	}
}

// remember caches what the kernel holds after an apply, computed from the
// plans, when every plan was read at the same generation and the
// generation has since moved by exactly the commits just made: every
// commit since the reads was this apply's. Otherwise it forgets, and the
// next plan reads the kernel.
func (c *Client) remember(plans []*Plan, commits int) {
	if !c.caching() || len(plans) == 0 {
		return
	}
	before := plans[0].gen
	after, err := c.conn.generation()
	ok := err == nil && after-before == uint32(commits)
	for _, p := range plans {
		ok = ok && p.genKnown && p.gen == before && p.Changes != nil && p.Changes.Name != ""
	}
	if !ok {
		c.forget(plans)
		return
	}
	for _, p := range plans {
		c.store(tableKey{p.Family, p.Changes.Name}, after, appliedState(p))
	}
}

// appliedState is the table as the kernel holds it after p was applied:
// Live with the changes replayed, and the pending stale chains still
// there, emptied. When p has a render, the state is built from it
// (diff.AppliedNFTables), so that the next plan, whose render shares
// what did not change, compares by pointer; after an apply with no
// changes too, so that the render's objects replace those read from
// the kernel from the first apply on.
func appliedState(p *Plan) *nft.Ruleset {
	var rs *nft.Ruleset
	switch {
	case p.Desired != nil:
		rs = diff.AppliedNFTables(p.Desired, p.Live, p.Changes)
	case p.Changes.Empty():
		return p.Live
	default:
		rs = diff.ReplayNFTables(p.Live, p.Changes)
	}
	for _, name := range p.Pending {
		for _, ch := range p.Changes.Chains {
			if ch.Verb == diff.DeleteChain && ch.Name == name {
				rs.Chains = append(rs.Chains, &nft.Chain{Name: name, Base: ch.Base, Comment: ch.Comment})
			}
		}
	}
	return rs
}
