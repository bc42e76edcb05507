package nftables

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// readAttempts bounds how often ReadTable starts over because another
// transaction committed while it read.
const readAttempts = 5

// ReadTable reads one table back into the value render produces: its
// comment, its named sets and maps with their elements (sorted as
// nft.Ruleset.SortElements sorts them), and its chains with their rules as
// nft 1.0.6 lists them. It returns nil, nil when the table does not exist.
//
// The read is consistent: it is repeated when nf_tables' generation ID
// changed while it ran. A rule whose expressions are not of the shapes the
// codec knows reads as a text starting with UnsupportedPrefix.
func (c *Conn) ReadTable(family nft.Family, table string) (*nft.Ruleset, error) {
	fam, err := familyNumber(family)
	if err != nil {
		return nil, err
	}
	for range readAttempts {
		gen, err := c.generation()
		if err != nil {
			return nil, fmt.Errorf("nftables: read generation: %w", err)
		}
		rs, err := c.readTable(fam, family, table)
		if errors.Is(err, errDumpInterrupted) || errors.Is(err, unix.ENOENT) {
			continue // changed while read: the table or a set went away
		}
		if err != nil {
			return nil, fmt.Errorf("nftables: read table %s %s: %w", family, table, err)
		}
		if now, err := c.generation(); err != nil || now != gen {
			continue
		}
		return rs, nil
	}
	return nil, fmt.Errorf("nftables: read table %s %s: the ruleset kept changing during %d attempts", family, table, readAttempts)
}

func familyNumber(f nft.Family) (byte, error) {
	switch f {
	case nft.IPv4:
		return unix.NFPROTO_IPV4, nil
	case nft.IPv6:
		return unix.NFPROTO_IPV6, nil
	}
	return 0, fmt.Errorf("nftables: unsupported family %q", f)
}

// tableReader accumulates one read of a table.
type tableReader struct {
	c      *Conn
	fam    byte
	table  string
	rs     *nft.Ruleset
	chains map[string]*nft.Chain
	named  map[string]*setInfo // named sets, for their elements
	anon   map[string]*anonData
}

type anonData struct {
	info  setInfo
	elems []rawElem
}

func (c *Conn) readTable(fam byte, family nft.Family, table string) (*nft.Ruleset, error) {
	r := &tableReader{c: c, fam: fam, table: table,
		rs:     &nft.Ruleset{Family: family, Table: table},
		chains: map[string]*nft.Chain{}, named: map[string]*setInfo{}, anon: map[string]*anonData{}}
	err := c.request(unix.NFT_MSG_GETTABLE, fam, false, func(e *nfnl.Encoder) {
		e.PutString(unix.NFTA_TABLE_NAME, table)
	}, r.tableMsg)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	steps := []func() error{r.readChains, r.readSets, r.readElements, r.readRules}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	r.rs.SortElements()
	return r.rs, nil
}

func (r *tableReader) tableMsg(m nfnl.Message) error {
	a, err := m.Attrs()
	if ud, ok := a[nfnl.NFTA_TABLE_USERDATA]; ok {
		r.rs.Comment = udataString(ud, udataComment)
	}
	return err
}

// dump runs one dump request filtered to the table (the kernel filters
// some dumps by table; every answer is checked again here).
func (r *tableReader) dump(msg, tableAttr uint16, extra func(e *nfnl.Encoder), fn func(attrs nfnl.Attrs) error) error {
	return r.c.request(msg, r.fam, true, func(e *nfnl.Encoder) {
		e.PutString(tableAttr, r.table)
		if extra != nil {
			extra(e)
		}
	}, func(m nfnl.Message) error {
		attrs, err := m.Attrs()
		if err != nil {
			return err
		}
		if attrs.String(tableAttr) != r.table {
			return nil
		}
		return fn(attrs)
	})
}

func (r *tableReader) readChains() error {
	return r.dump(unix.NFT_MSG_GETCHAIN, unix.NFTA_CHAIN_TABLE, nil, func(a nfnl.Attrs) error {
		ch := &nft.Chain{Name: nfnl.CString(a[unix.NFTA_CHAIN_NAME])}
		if ud, ok := a[nfnl.NFTA_CHAIN_USERDATA]; ok {
			ch.Comment = udataString(ud, udataComment)
		}
		if hook, ok := a[unix.NFTA_CHAIN_HOOK]; ok {
			base, err := decodeBaseChain(hook, a[unix.NFTA_CHAIN_POLICY], nfnl.CString(a[unix.NFTA_CHAIN_TYPE]))
			if err != nil {
				return fmt.Errorf("chain %s: %w", ch.Name, err)
			}
			ch.Base = base
		}
		r.rs.Chains = append(r.rs.Chains, ch)
		r.chains[ch.Name] = ch
		return nil
	})
}

func decodeBaseChain(hookAttr, policy []byte, typ string) (*nft.BaseChain, error) {
	var num uint32
	var prio int32
	_ = nfnl.Walk(hookAttr, func(t uint16, v []byte) error {
		switch t {
		case unix.NFTA_HOOK_HOOKNUM:
			num = nfnl.BE32(v)
		case unix.NFTA_HOOK_PRIORITY:
			prio = int32(nfnl.BE32(v))
		}
		return nil
	})
	hook, ok := hookName(num)
	if !ok {
		return nil, fmt.Errorf("unknown hook %d", num)
	}
	bc := &nft.BaseChain{Type: nft.ChainType(typ), Hook: hook, Priority: formatPriority(int(prio), hook), Policy: nft.Accept}
	switch p := nfnl.BE32(policy); {
	case policy == nil || p == nfnl.NF_ACCEPT:
	case p == nfnl.NF_DROP:
		bc.Policy = nft.Drop
	default:
		bc.Policy = nft.Policy(fmt.Sprintf("unsupported-%d", p))
	}
	return bc, nil
}
