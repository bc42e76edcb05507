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

// cacheUsable reports whether reads may be served from the cache.
func (c *Client) cacheUsable() bool {
	return c.Backend == NFT && c.CacheDir != nil && c.Generation != nil && c.NetnsCookie != 0
}

// cached returns the cached dump of family if it was read at generation
// gen in this namespace since this boot.
func (c *Client) cached(family nodetable.Family, gen uint32) *ipt.Ruleset {
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
	return rs
}

// store writes the dump of a family as read at generation gen.
func (c *Client) store(rs *ipt.Ruleset, gen uint32) error {
	key, ok := c.cacheKey(rs.Family, gen)
	if !ok {
		return errNoCacheKey
	}
	return c.CacheDir.Store(c.cacheName(rs.Family), key, []byte(rs.String()))
}

// forget removes the cached dumps of the given families. A dump that cannot
// be removed is still safe: its generation no longer matches.
func (c *Client) forget(families ...nodetable.Family) {
	for _, f := range families {
		_ = c.CacheDir.Remove(c.cacheName(f))
	}
}
