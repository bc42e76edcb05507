package iptablesnft

import (
	"errors"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
)

// ErrUnknown means a table holds something this package does not print
// exactly as iptables-nft-save would: the caller runs iptables-nft-save.
var ErrUnknown = errors.New("not a shape this reader prints")

// Reader reads iptables-nft's tables through one nf_tables connection,
// which stays in the network namespace it was opened in.
type Reader struct {
	Conn *nftables.Conn
}
