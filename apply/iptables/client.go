// Package iptables reads the node's live iptables rules and applies change
// sets to them with iptables-restore --noflush, one restore per family
// holding filter, then nat (each table atomic in the kernel), undoing the
// tables already written if a later one fails.
package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Execer runs a program with stdin and returns its stdout. It is the seam
// that tests use to inject failures; OSExec is the real one.
type Execer interface {
	Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)
}

// OSExec runs programs with os/exec, each in its own process group, so
// that a Ctrl-C on the terminal, which signals the foreground group,
// reaches this process (which finishes the restore it started) and not a
// restore in the middle of its input. Standard input is a file rather than
// a pipe: a restore whose parent dies still reads all of its input, and
// never commits the first tables of a cut-off input.
type OSExec struct{}

// Run implements Execer. The error names the command and carries its stderr.
func (OSExec) Run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	ownProcessGroup(cmd)
	if stdin != nil {
		f, err := inputFile(stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: input: %w", name, err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var nf *exec.Error
		if errors.As(err, &nf) {
			return nil, notFound(name, err)
		}
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// notFound is the error for a missing iptables tool.
func notFound(name string, err error) error {
	return fmt.Errorf("%s not found: install iptables (legacy or nft backend): %w", name, err)
}

// LookTools reports a missing save or restore tool of backend b before
// anything reads the kernel. Reading need not run them (ReadNFT and the
// cache read without iptables-nft-save), but a plan that no apply could
// carry out would mislead, and a missing tool is then found only when a
// restore fails.
func LookTools(b Backend) error {
	for _, what := range []string{"save", "restore"} {
		name := "iptables-" + string(b) + "-" + what
		if _, err := exec.LookPath(name); err != nil {
			return notFound(name, err)
		}
	}
	return nil
}

// inputFile returns an anonymous file holding b, positioned at its start:
// a memfd, or an unlinked temporary file where memfds are missing.
func inputFile(b []byte) (*os.File, error) {
	var f *os.File
	if mf, err := memfd("svcproxy-input"); err == nil {
		f = mf
	} else if f, err = os.CreateTemp("", "svcproxy-input-"); err != nil {
		return nil, err
	} else {
		os.Remove(f.Name())
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
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
	// Generation, CacheDir and NetnsCookie enable the nf_tables dump
	// cache (see cache.go): Generation reads the generation ID of the
	// network namespace that Exec works in (unset: no cache), CacheDir is
	// the directory for this namespace's files, and NetnsCookie is that
	// namespace's cookie (either unset: the cache is in memory only).
	CacheDir    *statefile.Dir
	Generation  func() (uint32, error)
	NetnsCookie uint64
	// DeferFiles writes cache files only when SaveCache is called, not
	// after every apply: for a long-running client.
	DeferFiles bool
	// CacheWarn receives each failure to write a cache file (a full,
	// read-only or unwritable state directory). The file only saves the
	// next run a read of the kernel, so the client goes on without it
	// and leaves the warning to the caller; nil drops it.
	CacheWarn func(error)
	// Ownership says which chains and jump rules belong to the mode being
	// applied (render.IPTablesOwnership, UserspaceOwnership, or the ipvs
	// mode's helper chains) and how they compare. It is required: Plan and
	// Reset refuse to run without it rather than guess a mode.
	Ownership *ipt.Ownership
	// Counters creates the nfacct counters that rules name (kube-proxy's
	// counting matches), in the network namespace Exec works in, before an
	// apply writes anything (apply/nfacct.Ensure, run there). Nil creates
	// none, and a restore of a rule naming a missing counter fails.
	Counters func(names []string) error

	// ReadNFT, when set, reads the nft backend's tables of a family
	// without iptables-nft-save, whose own code is quadratic in the
	// number of chains (apply/iptablesnft reads them over netlink: 2 s
	// where iptables-nft-save took 200 s at 10k Services). When it fails,
	// for one because a table holds a rule it does not print exactly as
	// iptables-nft-save would, iptables-nft-save reads the family.
	ReadNFT func(family nodetable.Family, tables []ipt.TableName) ([]byte, error)

	mem map[nodetable.Family]*memEntry // the cache in memory
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
//
// The kernel commits each table on its own, on both backends: the legacy
// one replaces a table per COMMIT, and iptables-nft-restore also sends one
// nf_tables transaction per COMMIT line rather than one for its whole
// input. So packets can meet the new filter table with the old nat table
// for a moment, and for good if the apply stops there. Filter goes first
// because that state is safe:
//
//   - The only links between the tables are marks and destinations. nat
//     DNATs before filter sees a packet (PREROUTING and OUTPUT run nat
//     before filter runs INPUT, FORWARD and OUTPUT), and filter's Service
//     rules (REJECT without endpoints, DROP without local endpoints,
//     KUBE-PROXY-FIREWALL's DROP outside loadBalancerSourceRanges) match
//     the Service's address, so they see only what nat left undone.
//   - Filter new, nat old: a packet is DNATed by the old rules, to an
//     endpoint the old state proxied to, or meets the new filter rules,
//     so it is dropped only where the new state drops it and passes
//     unproxied only where the new state lets it through (by proxying
//     it). KUBE-FORWARD, which accepts the masquerade mark nat sets,
//     exists before a first apply's nat rules set it.
//   - Nat new, filter old would not be safe: traffic that both states
//     keep from the node (a Service that lost its local endpoints, or
//     gained source ranges) is neither DNATed by the new nat rules nor
//     dropped by the old filter rules, so it goes on unproxied, to the
//     node's own sockets for a NodePort; and a first apply would DNAT and
//     mark forwarded traffic before KUBE-FORWARD accepts it.
//
// The same holds for an undo (the transition back) and for reset.
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

// dump reads the filter and nat tables of one family: with ReadNFT when it
// can, otherwise with iptables-save.
func (c *Client) dump(ctx context.Context, family nodetable.Family) (*ipt.Ruleset, error) {
	if c.Backend == NFT && c.ReadNFT != nil {
		if text, err := c.ReadNFT(family, Tables); err == nil {
			if rs, err := ipt.Parse(text, family); err == nil {
				return rs, nil
			}
		}
	}
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

// Restore runs one iptables-restore --noflush with the given script. It
// is not cancelled with ctx: killing a restore after it committed its
// first table would leave the next ones unwritten.
func (c *Client) Restore(ctx context.Context, family nodetable.Family, script []byte) error {
	args := []string{"--noflush"}
	if c.Backend == Legacy && c.WaitSeconds > 0 {
		args = append(args, "-w", fmt.Sprint(c.WaitSeconds), "-W", "100000")
	}
	_, err := c.Exec.Run(context.WithoutCancel(ctx), script, c.tool(family, "restore"), args...)
	return err
}
