package nftables

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Batch is one nf_tables transaction on one table: the operations queue up
// as netlink messages and Commit sends them in one batch, which the kernel
// applies entirely or not at all. A Batch is not safe for concurrent use.
//
// Methods that return no error record the first invalid input and make
// Commit fail without sending anything.
type Batch struct {
	conn   *Conn
	family nft.Family
	fam    byte
	table  string

	enc     nfnl.Encoder
	ops     []batchOp // one per message after the batch begin
	objects int       // see Ops
	err     error     // first queueing error

	sets      map[string]*setInfo // declared sets, for element encoding
	badSets   map[string]error    // declared sets the codec cannot encode
	nextID    uint32              // NFTA_SET_ID within the batch
	fresh     bool                // the table was deleted earlier in this batch
	anonCount int                 // anonymous sets named so far
	lastMsg   int                 // offset of the last message
	exprOpen  [2]int              // the expression putExpr is writing
	mapped    []byte              // the memory Grow mapped; see Release
}

// batchOp describes one queued message for error reports.
type batchOp struct {
	verb, kind, name, detail string
}

func (o batchOp) String() string {
	s := o.verb + " " + o.kind
	if o.name != "" {
		s += " " + strconv.Quote(o.name)
	}
	if o.detail != "" {
		s += ": " + o.detail
	}
	return s
}

// NewBatch starts a transaction on the table family/table.
func (c *Conn) NewBatch(family nft.Family, table string) *Batch {
	b := &Batch{conn: c, family: family, table: table, lastMsg: -1,
		sets: map[string]*setInfo{}, badSets: map[string]error{}}
	switch family {
	case nft.IPv4:
		b.fam = unix.NFPROTO_IPV4
	case nft.IPv6:
		b.fam = unix.NFPROTO_IPV6
	default:
		b.fail(fmt.Errorf("unsupported family %q", family))
	}
	start := b.enc.BeginMsg(unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)
	b.enc.EndMsg(start)
	return b
}

// Grow makes room for n more bytes of messages. Room for a large batch
// is mapped (see mapBuffer), and the caller must Release the batch when
// done with it.
func (b *Batch) Grow(n int) {
	if n < mapBufferMin || b.mapped != nil {
		b.enc.Buf = slices.Grow(b.enc.Buf, n)
		return
	}
	buf, err := mapBuffer(len(b.enc.Buf) + n)
	if err != nil {
		b.enc.Buf = slices.Grow(b.enc.Buf, n)
		return
	}
	b.mapped = buf
	b.enc.Buf = append(buf[:0], b.enc.Buf...)
}

// Release unmaps the memory that Grow mapped, if any. The batch cannot be
// used afterwards.
func (b *Batch) Release() {
	if b.mapped == nil {
		return
	}
	b.enc.Buf = nil
	unmapBuffer(b.mapped)
	b.mapped = nil
	b.err = errors.New("nftables: batch released")
}

func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = fmt.Errorf("nftables: table %s %s: %w", b.family, b.table, err)
	}
}

// Ops is the number of netlink objects queued: one per table, chain, set,
// rule, flush or delete, and one per set element (element messages carry
// many). It grows with the size of the change, which is what the
// transaction-size test asserts.
func (b *Batch) Ops() int { return b.objects }

// Declare tells the batch about sets that already exist in the kernel, so
// that AddElements and DeleteElements can encode their keys and values. A
// set whose type the codec does not know fails the batch only if elements
// of it are queued.
func (b *Batch) Declare(sets ...*nft.Set) {
	for _, s := range sets {
		info, err := newSetInfo(s)
		if err != nil {
			b.badSets[s.Name] = err
			continue
		}
		b.sets[s.Name] = info
		delete(b.badSets, s.Name)
	}
}

// newSetInfo reads a set declaration's types and flags.
func newSetInfo(s *nft.Set) (*setInfo, error) {
	info := &setInfo{name: s.Name}
	if err := info.declareTypes(s); err != nil {
		return nil, err
	}
	for _, f := range s.Flags {
		switch f {
		case nft.FlagInterval:
			info.interval = true
		case nft.FlagConstant, nft.FlagDynamic, nft.FlagTimeout:
		default:
			return nil, fmt.Errorf("set %s: unsupported flag %q", s.Name, f)
		}
	}
	info.keyOrder = info.key.order()
	return info, nil
}

// declareTypes reads the set's key and data types, by name or by
// expression (typeof).
func (info *setInfo) declareTypes(s *nft.Set) error {
	var err error
	if s.Typeof {
		if info.key, info.keyTypeof, err = encodeTypeof(s.Type); err != nil {
			return fmt.Errorf("set %s: %w", s.Name, err)
		}
		if s.DataType == "verdict" {
			info.data = setType{typeVerdict}
		} else if s.DataType != "" {
			if info.data, info.dataTypeof, err = encodeTypeof(s.DataType); err != nil {
				return fmt.Errorf("map %s: %w", s.Name, err)
			}
		}
		return nil
	}
	if info.key, err = parseSetType(s.Type); err != nil || info.key.isVerdict() {
		return fmt.Errorf("set %s: bad type %q", s.Name, s.Type)
	}
	if s.DataType != "" {
		if info.data, err = parseSetType(s.DataType); err != nil {
			return fmt.Errorf("map %s: bad data type %q", s.Name, s.DataType)
		}
	}
	return nil
}

// begin starts a message of the batch; finish closes it.
func (b *Batch) begin(msg uint16, flags uint16, o batchOp) int {
	b.ops = append(b.ops, o)
	b.objects++
	start := b.enc.BeginMsg(nfnl.NFTablesType(msg), unix.NLM_F_REQUEST|flags, b.fam, 0)
	b.lastMsg = start
	return start
}

func (b *Batch) finish(start int) {
	b.enc.EndMsg(start)
	if b.enc.Err != nil {
		b.fail(fmt.Errorf("%s: %w", b.ops[len(b.ops)-1], b.enc.Err))
		b.enc.Err = nil
	}
}

// AddTable adds the table with its comment; like `nft add table`, it is a
// no-op when the table exists, and the kernel keeps the existing comment.
func (b *Batch) AddTable(comment string) {
	start := b.begin(unix.NFT_MSG_NEWTABLE, unix.NLM_F_CREATE, batchOp{verb: "add", kind: "table", name: b.table})
	b.enc.PutString(unix.NFTA_TABLE_NAME, b.table)
	b.enc.PutU32(unix.NFTA_TABLE_FLAGS, 0)
	if comment != "" {
		b.enc.Put(nfnl.NFTA_TABLE_USERDATA, appendUdataString(nil, udataComment, comment))
	}
	b.finish(start)
}

// DeleteTable deletes the table with everything in it; the transaction
// fails if it does not exist (queue AddTable first to delete it if it
// exists, as `nft -f` scripts do).
func (b *Batch) DeleteTable() {
	start := b.begin(unix.NFT_MSG_DELTABLE, 0, batchOp{verb: "delete", kind: "table", name: b.table})
	b.enc.PutString(unix.NFTA_TABLE_NAME, b.table)
	b.finish(start)
	b.fresh = true
	clear(b.sets)
	clear(b.badSets)
}

// DeleteSet deletes a set or map with its elements.
func (b *Batch) DeleteSet(name string) {
	start := b.begin(unix.NFT_MSG_DELSET, 0, batchOp{verb: "delete", kind: "set", name: name})
	b.enc.PutString(unix.NFTA_SET_TABLE, b.table)
	b.enc.PutString(unix.NFTA_SET_NAME, name)
	b.finish(start)
	delete(b.sets, name)
	delete(b.badSets, name)
}

// FlushChain deletes all rules of a chain.
func (b *Batch) FlushChain(name string) {
	start := b.begin(unix.NFT_MSG_DELRULE, 0, batchOp{verb: "flush", kind: "chain", name: name})
	b.enc.PutString(unix.NFTA_RULE_TABLE, b.table)
	b.enc.PutString(unix.NFTA_RULE_CHAIN, name)
	b.finish(start)
}

// DeleteChain deletes an empty chain that nothing jumps to.
func (b *Batch) DeleteChain(name string) {
	start := b.begin(unix.NFT_MSG_DELCHAIN, 0, batchOp{verb: "delete", kind: "chain", name: name})
	b.enc.PutString(unix.NFTA_CHAIN_TABLE, b.table)
	b.enc.PutString(unix.NFTA_CHAIN_NAME, name)
	b.finish(start)
}

// AddRule compiles a rule, as nft lists it, and appends it to the chain,
// after the anonymous sets it uses.
func (b *Batch) AddRule(chain string, r nft.Rule) error {
	cr, err := compileRule(b.fam, string(r))
	return b.addRule(chain, r, cr, err)
}

// addRule appends r, compiled to cr (or not, for err), to the chain.
func (b *Batch) addRule(chain string, r nft.Rule, cr *compiledRule, err error) error {
	if err != nil {
		err = fmt.Errorf("nftables: chain %s: rule %q: %w", chain, r, err)
		b.fail(err)
		return err
	}
	for _, as := range cr.anon {
		b.addAnonSet(as)
	}
	return b.addCompiledRule(chain, string(r), cr)
}

// writeTable replaces the table rs names with rs in one transaction: it
// deletes the table if it exists and creates it anew, with its chains,
// sets and maps (with their elements) and rules. Other tables are not
// touched.
func writeTable(c *Conn, rs *nft.Ruleset) error {
	b, err := tableBatch(c, rs)
	if err != nil {
		return err
	}
	return b.Commit()
}

// tableBatch queues what writeTable commits: chains before the maps whose
// elements jump to them, rules last.
func tableBatch(c *Conn, rs *nft.Ruleset) (*Batch, error) {
	b := c.NewBatch(rs.Family, rs.Table)
	b.AddTable("")
	b.DeleteTable()
	b.AddTable(rs.Comment)
	for _, ch := range rs.Chains {
		b.AddChain(ch)
	}
	for _, s := range rs.Sets {
		if err := b.AddSet(s); err != nil {
			return nil, err
		}
	}
	for _, ch := range rs.Chains {
		for _, r := range ch.Rules {
			if err := b.AddRule(ch.Name, r); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}
