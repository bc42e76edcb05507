//go:build !linux

package nftables

import (
	"context"
	"errors"
	"fmt"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// errNeedsLinux: nf_tables is Linux's. The commands that read or write it
// refuse to run elsewhere before they get here.
var errNeedsLinux = fmt.Errorf("%w: nf_tables needs Linux", errors.ErrUnsupported)

// Conn cannot be opened here.
type Conn struct{}

// Open fails: see errNeedsLinux.
func Open() (*Conn, error) { return nil, errNeedsLinux }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// ReadTable fails.
func (c *Conn) ReadTable(nft.Family, string) (*nft.Ruleset, error) { return nil, errNeedsLinux }

// Apply fails.
func (c *Client) Apply(context.Context, []*Plan) error { return errNeedsLinux }

func (c *Conn) generation() (uint32, error) { return 0, errNeedsLinux }

func (c *Conn) netnsCookie() (uint64, error) { return 0, errNeedsLinux }

func (c *Conn) commit(transaction) (int, error) { return 0, errNeedsLinux }

// Generation fails.
func (c *Conn) Generation() (uint32, error) { return 0, errNeedsLinux }

// RawChains fails.
func (c *Conn) RawChains(nft.Family, string) ([]RawChain, bool, error) {
	return nil, false, errNeedsLinux
}

// RawRules fails.
func (c *Conn) RawRules(nft.Family, string, string, func(RawRule) error) error {
	return errNeedsLinux
}
