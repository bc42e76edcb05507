package iptablesnft

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftables"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	ipt "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/iptables"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// errMoved means the ruleset changed under every attempt to read it.
var errMoved = errors.New("the nf_tables ruleset kept changing while it was read")

// attempts is how often Read starts over when the generation moves.
const attempts = 3

// Read returns the named tables of a family as iptables-nft-save prints
// them, one after the other; a table that does not exist prints its
// built-in chains, as iptables-nft-save -t does. The tables are read
// chain by chain, so the read is taken again when nf_tables' generation
// moved meanwhile. A shape this package does not print fails with
// ErrUnknown.
func (r Reader) Read(family nodetable.Family, tables []ipt.TableName) ([]byte, error) {
	for range attempts {
		before, err := r.Conn.Generation()
		if err != nil {
			return nil, err
		}
		var out []byte
		for _, t := range tables {
			if out, err = r.readTable(out, family, t); err != nil {
				return nil, err
			}
		}
		after, err := r.Conn.Generation()
		if err != nil {
			return nil, err
		}
		if after == before {
			return out, nil
		}
	}
	return nil, errMoved
}

func (r Reader) readTable(buf []byte, family nodetable.Family, table ipt.TableName) ([]byte, error) {
	fam, nfam := ipv4, nft.IPv4
	if family == nodetable.IPv6 {
		fam, nfam = ipv6, nft.IPv6
	}
	// A missing table reads as empty: iptables-nft-save -t prints its
	// built-in chains all the same.
	raw, _, err := r.Conn.RawChains(nfam, string(table))
	if err != nil {
		return nil, err
	}
	chains, err := order(table, raw)
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(raw))
	for _, c := range raw {
		present[c.Name] = true
	}
	buf = append(append(append(buf, '*'), table...), '\n')
	for _, c := range chains {
		buf = appendHeader(buf, c)
	}
	for _, c := range chains {
		if !present[c.Name] {
			continue
		}
		err := r.Conn.RawRules(nfam, string(table), c.Name, func(rule nftables.RawRule) error {
			// iptables-nft-save prints a comment kept in the rule's
			// userdata as a match of its own; iptables-nft v1.8.9 keeps
			// none there, and this package does not read it.
			if len(rule.Userdata) > 0 {
				return unknown("a rule with userdata")
			}
			var err error
			buf, err = appendRule(buf, fam, c.Name, rule.Exprs)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s chain %s: %w", table, c.Name, err)
		}
	}
	return append(buf, "COMMIT\n"...), nil
}
