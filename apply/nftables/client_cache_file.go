package nftables

import (
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// A cache file serves the next run of the command. It is a statefile
// envelope keyed by the boot ID, the cookie of the connection's network
// namespace and the generation, since two namespaces can be at the same
// generation and both counters restart at boot, with a checksum. Its
// payload is encodeCache's, and its format names the shape of
// nft.Ruleset, so a build whose Ruleset differs reads the kernel instead
// of decoding another layout. A file that does not match in every
// respect, or does not decode, is removed and the kernel is read.

var cacheFormat = "nftables-table v2 " + statefile.TypeShape(nft.Ruleset{})

func cacheName(key tableKey) string {
	return "nftables-" + string(key.family) + "-" + key.table + ".table"
}

// legacyCacheName is the name under which builds before encodeCache kept
// the table as gob; every store removes that file (one unlink, which
// finds nothing after the first).
func legacyCacheName(key tableKey) string {
	return "nftables-" + string(key.family) + "-" + key.table + ".gob"
}

// fileKey is what a file with key's state at generation gen is exact for.
func (c *Client) fileKey(key tableKey, gen uint32) (statefile.Key, bool) {
	boot, err := statefile.BootID()
	if err != nil {
		return statefile.Key{}, false
	}
	cookie, err := c.conn.netnsCookie()
	if err != nil {
		return statefile.Key{}, false
	}
	format := cacheFormat + " " + string(key.family) + " " + key.table
	return statefile.Key{Format: format, BootID: boot, NetnsCookie: cookie, Generation: gen}, true
}

// loadFile returns key's state at generation gen from its file, if the
// file is exactly that.
func (c *Client) loadFile(key tableKey, gen uint32) (*nft.Ruleset, bool) {
	if c.CacheDir == nil {
		return nil, false
	}
	fk, ok := c.fileKey(key, gen)
	if !ok {
		return nil, false
	}
	data, err := c.CacheDir.Load(cacheName(key), fk)
	if err != nil {
		return nil, false
	}
	table, err := decodeCache(data) // data is the table's from here on
	if err != nil || table != nil && (table.Family != key.family || table.Table != key.table) {
		c.removeFile(key)
		return nil, false
	}
	return table, true
}

// storeFile writes rs as key's state at generation gen. A file that cannot
// be written is removed, so that it cannot serve a stale state later (its
// generation would not match anyway), and the failure goes to CacheWarn.
func (c *Client) storeFile(key tableKey, gen uint32, rs *nft.Ruleset) {
	if c.CacheDir == nil {
		return
	}
	fk, ok := c.fileKey(key, gen)
	var err error
	if ok {
		err = storeCacheFile(c.CacheDir, cacheName(key), fk, encodeCache(rs))
	}
	if !ok || err != nil {
		c.removeFile(key)
	}
	if err != nil && c.CacheWarn != nil {
		c.CacheWarn(err)
	}
	_ = c.CacheDir.Remove(legacyCacheName(key)) // gone after the first store
}

// storeCacheFile is the one write of a cache file; tests replace it to
// fail as a full or read-only filesystem does.
var storeCacheFile = (*statefile.Dir).Store

func (c *Client) removeFile(key tableKey) {
	if c.CacheDir != nil {
		_ = c.CacheDir.Remove(cacheName(key))
	}
}
