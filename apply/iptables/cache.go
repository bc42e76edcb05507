package iptables

import (
	"errors"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// A dump of the nf_tables backend's tables costs far more than the small
// changes a sync usually makes: iptables-nft-save needs about 1.3 s for a
// 1k-Service nat table. nf_tables numbers every committed transaction in a
// network namespace (the generation ID), so a dump taken at generation G is
// still exact while the generation is G. The cache keeps the last dump of
// each family in a statefile envelope keyed by the boot ID, the network
// namespace's cookie and the generation (two namespaces can be at the same
// generation, and both counters restart at boot), with a checksum. Any
// change by anyone moves the generation; a file that does not match in
// every respect is removed and the kernel is read.
//
// The last state is also kept in memory, checked against the generation
// in the same way, so that a long-running client (apply --watch) neither
// parses the file nor dumps the kernel on every sync. With DeferFiles it
// also stops writing the file after every apply, which costs more than
// the apply itself on a large node (formatting 1k Services' rules took 40
// to 100 ms), and SaveCache writes it when the caller has time.

func (c *Client) cacheName(family nodetable.Family) string {
	return "iptables-" + string(c.Backend) + "-" + strings.ToLower(string(family)) + ".rules"
}

var errNoCacheKey = errors.New("iptables cache: no boot ID")

// cacheKey is what a dump of family read at generation gen is exact for.
// The payload is iptables-save's text, as ipt.Ruleset prints it.
func (c *Client) cacheKey(family nodetable.Family, gen uint32) (statefile.Key, bool) {
	boot, err := statefile.BootID()
	if err != nil {
		return statefile.Key{}, false
	}
	format := "iptables-" + string(c.Backend) + "-save " + strings.ToLower(string(family)) + " filter,nat v1"
	return statefile.Key{Format: format, BootID: boot, NetnsCookie: c.NetnsCookie, Generation: gen}, true
}

// cacheUsable reports whether reads may be served from a cache: the
// generation tells whether a state is still the kernel's.
func (c *Client) cacheUsable() bool {
	return c.Backend == NFT && c.Generation != nil
}

// fileUsable reports whether the cache also has a file.
func (c *Client) fileUsable() bool {
	return c.cacheUsable() && c.CacheDir != nil && c.NetnsCookie != 0
}

// memEntry is a family's state as the kernel held it at generation gen;
// unsaved says that its file has not been written yet.
type memEntry struct {
	gen     uint32
	rs      *ipt.Ruleset
	unsaved bool
}

// cached returns the state of family if it was read or written at
// generation gen: from memory, or from the file of this namespace since
// this boot.
func (c *Client) cached(family nodetable.Family, gen uint32) *ipt.Ruleset {
	if e := c.mem[family]; e != nil && e.gen == gen {
		return e.rs
	}
	if !c.fileUsable() {
		return nil
	}
	key, ok := c.cacheKey(family, gen)
	if !ok {
		return nil
	}
	data, err := c.CacheDir.Load(c.cacheName(family), key)
	if err != nil {
		return nil
	}
	rs, err := ipt.Parse(data, family)
	if err != nil {
		c.forget(family)
		return nil
	}
	c.keep(rs, gen, false)
	return rs
}

func (c *Client) keep(rs *ipt.Ruleset, gen uint32, unsaved bool) {
	if c.mem == nil {
		c.mem = map[nodetable.Family]*memEntry{}
	}
	c.mem[rs.Family] = &memEntry{gen: gen, rs: rs, unsaved: unsaved}
}

// store keeps the state of a family as read or written at generation gen,
// and writes its file unless DeferFiles holds it back for SaveCache.
func (c *Client) store(rs *ipt.Ruleset, gen uint32) error {
	c.keep(rs, gen, c.DeferFiles)
	if c.DeferFiles || !c.fileUsable() {
		return nil
	}
	return c.writeFile(rs, gen)
}

// writeFile writes the file of rs; a failed write goes to CacheWarn too.
func (c *Client) writeFile(rs *ipt.Ruleset, gen uint32) error {
	key, ok := c.cacheKey(rs.Family, gen)
	if !ok {
		return errNoCacheKey
	}
	err := storeCacheFile(c.CacheDir, c.cacheName(rs.Family), key, rs.Bytes())
	if err != nil && c.CacheWarn != nil {
		c.CacheWarn(err)
	}
	return err
}

// storeCacheFile is the one write of a cache file; tests replace it to
// fail as a full or read-only filesystem does.
var storeCacheFile = (*statefile.Dir).Store

// SaveCache writes the files that DeferFiles held back, for the states
// that are still the kernel's; a state the generation has left behind is
// dropped, as its file could serve nothing. A file it cannot write goes
// to CacheWarn, as after an apply; the error is that of reading the
// generation.
func (c *Client) SaveCache() error {
	if !c.fileUsable() {
		return nil
	}
	gen, err := c.Generation()
	if err != nil {
		return err
	}
	for _, e := range c.mem {
		if !e.unsaved || e.gen != gen {
			continue
		}
		e.unsaved = false
		_ = c.writeFile(e.rs, e.gen) // a failure went to CacheWarn
	}
	return nil
}

// forget drops the states of the given families, and removes their files.
// A file that cannot be removed is still safe: its generation no longer
// matches.
func (c *Client) forget(families ...nodetable.Family) {
	for _, f := range families {
		delete(c.mem, f)
		if c.CacheDir != nil {
			_ = c.CacheDir.Remove(c.cacheName(f))
		}
	}
}
