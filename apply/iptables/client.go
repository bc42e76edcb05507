// Package iptables reads the node's live iptables rules and applies change
// sets to them with iptables-restore --noflush, one atomic restore per
// table, undoing the tables already written if a later one fails.
package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Execer runs a program with stdin and returns its stdout. It is the seam
// that tests use to inject failures; OSExec is the real one.
type Execer interface {
	Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)
}

// OSExec runs programs with os/exec.
type OSExec struct{}

// Run implements Execer. The error names the command and carries its stderr.
func (OSExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var nf *exec.Error
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%s not found: install iptables (legacy or nft backend): %w", name, err)
		}
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Backend is an iptables backend: the legacy x_tables or nf_tables.
type Backend string

const (
	Legacy Backend = "legacy"
	NFT    Backend = "nft"
)

// Client reads and writes one backend's tables.
type Client struct {
	Exec    Execer
	Backend Backend
	// WaitSeconds is how long restore waits for the xtables lock (-w).
	WaitSeconds int
	// CacheDir, Generation and NetnsCookie enable the nf_tables dump
	// cache (see cache.go): CacheDir is the directory for this network
	// namespace's files, Generation reads the generation ID of the network
	// namespace that Exec works in, and NetnsCookie is that namespace's
	// cookie. Any of them unset disables it.
	CacheDir    *statefile.Dir
	Generation  func() (uint32, error)
	NetnsCookie uint64
	// Ownership says which chains and jump rules belong to the mode being
	// applied (render.IPTablesOwnership, UserspaceOwnership, or the ipvs
	// mode's helper chains) and how they compare. It is required: Plan and
	// Reset refuse to run without it rather than guess a mode.
	Ownership *ipt.Ownership
}

// errNoOwnership is a Client built without its mode's ownership.
var errNoOwnership = errors.New("iptables client: no ownership policy given")

// tool returns the binary of the backend for a family: "iptables-nft-save".
func (c *Client) tool(family nodetable.Family, what string) string {
	bin := "iptables"
	if family == nodetable.IPv6 {
		bin = "ip6tables"
	}
	return bin + "-" + string(c.Backend) + "-" + what
}

// Tables are the tables the tool writes, in the order it writes them.
var Tables = []ipt.TableName{ipt.Filter, ipt.NAT}

// Read returns the filter and nat tables of one family: from the cache
// when the nf_tables generation has not moved since they were dumped,
// otherwise dumped afresh.
func (c *Client) Read(ctx context.Context, family nodetable.Family) (*ipt.Ruleset, error) {
	rs, _, err := c.readAt(ctx, family)
	return rs, err
}

// readAt is Read that also returns the nf_tables generation the result is
// exact at, or noGeneration when that is unknown.
func (c *Client) readAt(ctx context.Context, family nodetable.Family) (*ipt.Ruleset, int64, error) {
	if !c.cacheUsable() {
		rs, err := c.dump(ctx, family)
		return rs, noGeneration, err
	}
	before, err := c.Generation()
	if err != nil {
		rs, err := c.dump(ctx, family)
		return rs, noGeneration, err
	}
	if rs := c.cached(family, before); rs != nil {
		return rs, int64(before), nil
	}
	rs, err := c.dump(ctx, family)
	if err != nil {
		return nil, noGeneration, err
	}
	if after, err := c.Generation(); err == nil && after == before {
		if err := c.store(rs, after); err != nil {
			c.forget(family)
		}
		return rs, int64(after), nil
	}
	return rs, noGeneration, nil
}

// noGeneration marks a read whose nf_tables generation is unknown.
const noGeneration = -1

// raiseStackLimit lifts the stack limit that child processes inherit:
// iptables-nft-save recurses deeply enough to overflow the default 8 MiB
// stack on a 10k-Service nat table (it segfaults after about 200 s; with
// the limit raised it completes in about the same time).
var raiseStackLimit = sync.OnceFunc(func() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_STACK, &lim) == nil && lim.Cur != unix.RLIM_INFINITY && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = unix.Setrlimit(unix.RLIMIT_STACK, &lim)
	}
})

// dump runs iptables-save for the filter and nat tables of one family.
func (c *Client) dump(ctx context.Context, family nodetable.Family) (*ipt.Ruleset, error) {
	raiseStackLimit()
	var all []byte
	for _, t := range Tables {
		out, err := c.Exec.Run(ctx, nil, c.tool(family, "save"), "-t", string(t))
		if err != nil {
			return nil, fmt.Errorf("read %s %s table: %w", family, t, err)
		}
		all = append(all, out...)
	}
	rs, err := ipt.Parse(all, family)
	if err != nil {
		return nil, fmt.Errorf("read %s rules: %w", family, err)
	}
	return rs, nil
}

// Restore runs one iptables-restore --noflush with the given script.
func (c *Client) Restore(ctx context.Context, family nodetable.Family, script []byte) error {
	args := []string{"--noflush"}
	if c.Backend == Legacy && c.WaitSeconds > 0 {
		args = append(args, "-w", fmt.Sprint(c.WaitSeconds), "-W", "100000")
	}
	_, err := c.Exec.Run(ctx, script, c.tool(family, "restore"), args...)
	return err
}
