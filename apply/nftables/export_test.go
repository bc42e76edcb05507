package nftables

import (
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
