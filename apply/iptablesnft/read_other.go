//go:build !linux

package iptablesnft

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
)

// Read fails: iptables-nft's tables are nf_tables', which is Linux's. The
// commands that read them refuse to run elsewhere before they get here.
func (r Reader) Read(nodetable.Family, []ipt.TableName) ([]byte, error) {
	return nil, fmt.Errorf("%w: iptables-nft needs Linux", errors.ErrUnsupported)
}
