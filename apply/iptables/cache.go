package iptables

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// A dump of the nf_tables backend's tables costs far more than the small
// changes a sync usually makes: iptables-nft-save needs about 1.3 s for a
// 1k-Service nat table. nf_tables numbers every committed transaction in a
// network namespace (the generation ID), so a dump taken at generation G is
// still exact while the generation is G. The cache keeps the last dump of
// each family with its generation; any change by anyone invalidates it.

const genHeader = "# nf_tables generation "

func (c *Client) cachePath(family nodetable.Family) string {
	return filepath.Join(c.CacheDir, "iptables-"+string(c.Backend)+"-"+strings.ToLower(string(family))+".rules")
}

// cacheUsable reports whether reads may be served from the cache.
func (c *Client) cacheUsable() bool {
	return c.Backend == NFT && c.CacheDir != "" && c.Generation != nil
}

// cached returns the cached dump of family if it was read at generation gen.
func (c *Client) cached(family nodetable.Family, gen uint32) *ipt.Ruleset {
	data, err := os.ReadFile(c.cachePath(family))
	if err != nil {
		return nil
	}
	first, rest, _ := strings.Cut(string(data), "\n")
	if first != genHeader+strconv.FormatUint(uint64(gen), 10) {
		return nil
	}
	rs, err := ipt.Parse([]byte(rest), family)
	if err != nil {
		return nil
	}
	return rs
}

// store writes the dump of a family as read at generation gen.
func (c *Client) store(rs *ipt.Ruleset, gen uint32) error {
	if err := os.MkdirAll(c.CacheDir, 0o700); err != nil {
		return err
	}
	path := c.cachePath(rs.Family)
	tmp := path + ".tmp"
	data := genHeader + strconv.FormatUint(uint64(gen), 10) + "\n" + rs.String()
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// forget removes the cached dumps of the given families. A dump that cannot
// be removed is still safe: its generation no longer matches.
func (c *Client) forget(families ...nodetable.Family) {
	for _, f := range families {
		_ = os.Remove(c.cachePath(f))
	}
}
