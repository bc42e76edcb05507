package kernel

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/google/nftables"
)

// Positions finds where a rule stands in its chain from its handle, as
// trace events name rules by handle and the readers of the proxy's
// tables list them in order. It reads each chain once.
type Positions struct {
	conn    *nftables.Conn
	handles map[[3]string][]uint64
}

// NewPositions opens nf_tables in this network namespace; every read
// is bounded (netlinkWait).
func NewPositions() (*Positions, error) {
	c, err := nftables.New(bounded(netlinkWait))
	if err != nil {
		return nil, fmt.Errorf("nf_tables: %w", err)
	}
	return &Positions{conn: c, handles: map[[3]string][]uint64{}}, nil
}

var tableFamilies = map[string]nftables.TableFamily{
	"ip": nftables.TableFamilyIPv4, "ip6": nftables.TableFamilyIPv6, "inet": nftables.TableFamilyINet,
}

// Of returns the rule's index in its chain, or -1 when the chain no
// longer holds it.
func (ps *Positions) Of(family, table, chain string, handle uint64) (int, error) {
	key := [3]string{family, table, chain}
	hs, ok := ps.handles[key]
	if !ok {
		fam, known := tableFamilies[family]
		if !known {
			return -1, nil
		}
		rules, err := ps.conn.GetRules(&nftables.Table{Name: table, Family: fam}, &nftables.Chain{Name: chain})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("nf_tables did not answer within %v", netlinkWait)
		}
		if err != nil {
			return -1, fmt.Errorf("list the rules of %s %s %s: %w", family, table, chain, err)
		}
		for _, r := range rules {
			hs = append(hs, r.Handle)
		}
		ps.handles[key] = hs
	}
	return slices.Index(hs, handle), nil
}
