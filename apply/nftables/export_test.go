package nftables

import (
	"os"
	"path/filepath"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// CacheFileKey is the key of the cache file of a table at generation gen,
// for the external tests.
func (c *Client) CacheFileKey(family nft.Family, table string, gen uint32) statefile.Key {
	k, _ := c.fileKey(tableKey{family, table}, gen)
	return k
}

// EncodeCache and DecodeCache are a cache file's payload codec, for the
// external tests.
var (
	EncodeCache = encodeCache
	DecodeCache = decodeCache
)

// FailCacheWrites makes every cache file write fail with err, as a full
// or read-only filesystem does, until the test ends. Tests that call it
// may not run in parallel.
func FailCacheWrites(t interface{ Cleanup(func()) }, err error) {
	real := storeCacheFile
	storeCacheFile = func(d *statefile.Dir, name string, _ statefile.Key, _ []byte) error {
		return &os.PathError{Op: "write", Path: filepath.Join(d.Path(), name), Err: err}
	}
	t.Cleanup(func() { storeCacheFile = real })
}
