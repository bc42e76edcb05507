package nftables

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// Element messages are cut at whichever limit comes first. The element
// list is one netlink attribute with a 16-bit length: google/nftables
// v0.3.0 lets it wrap and the kernel then gets a fraction of the elements
// without an error (10k elements in one call reached the kernel as 1,808).
const (
	maxElemsPerMsg     = 400
	maxElemBytesPerMsg = 48 << 10
)

// AddChain declares a chain: a base chain's type, hook, priority and
// policy, and the chain's comment. Like `nft add chain` it is a no-op for
// a chain that exists with the same hook; the kernel keeps an existing
// chain's comment (delete and re-create the chain to change it).
func (b *Batch) AddChain(c *nft.Chain) {
	start := b.begin(unix.NFT_MSG_NEWCHAIN, unix.NLM_F_CREATE, batchOp{verb: "add", kind: "chain", name: c.Name})
	b.enc.PutString(unix.NFTA_CHAIN_TABLE, b.table)
	b.enc.PutString(unix.NFTA_CHAIN_NAME, c.Name)
	if bc := c.Base; bc != nil {
		hook, prio, err := baseChainHook(bc)
		if err != nil {
			b.fail(fmt.Errorf("chain %s: %w", c.Name, err))
		}
		h := b.enc.Nested(unix.NFTA_CHAIN_HOOK)
		b.enc.PutU32(unix.NFTA_HOOK_HOOKNUM, hook)
		b.enc.PutU32(unix.NFTA_HOOK_PRIORITY, uint32(int32(prio)))
		b.enc.End(h)
		policy := uint32(nfnl.NF_ACCEPT)
		switch bc.Policy {
		case nft.Accept, "":
		case nft.Drop:
			policy = nfnl.NF_DROP
		default:
			b.fail(fmt.Errorf("chain %s: unsupported policy %q", c.Name, bc.Policy))
		}
		b.enc.PutU32(unix.NFTA_CHAIN_POLICY, policy)
		b.enc.PutString(unix.NFTA_CHAIN_TYPE, string(bc.Type))
	}
	if c.Comment != "" {
		b.enc.Put(nfnl.NFTA_CHAIN_USERDATA, appendUdataString(nil, udataComment, c.Comment))
	}
	b.finish(start)
}

// AddSet declares a set or map and adds its elements (in chunks).
func (b *Batch) AddSet(s *nft.Set) error {
	if err := b.declareSet(s); err != nil {
		return err
	}
	return b.AddElements(s.Name, s.Elements)
}

// declareSet queues a set's NEWSET, without its elements.
func (b *Batch) declareSet(s *nft.Set) error {
	info, err := newSetInfo(s)
	if err != nil {
		b.fail(err)
		return b.err
	}
	kind := "set"
	if s.IsMap() {
		kind = "map"
	}
	start := b.begin(unix.NFT_MSG_NEWSET, unix.NLM_F_CREATE, batchOp{verb: "add", kind: kind, name: s.Name})
	b.nextID++
	b.putSetAttrs(info, s.Name, b.nextID, setFlags(s), uint32(s.Size), s.Timeout, s.Comment)
	b.finish(start)
	b.sets[s.Name] = info
	delete(b.badSets, s.Name)
	return nil
}

func setFlags(s *nft.Set) uint32 {
	var f uint32
	if s.IsMap() {
		f |= unix.NFT_SET_MAP
	}
	for _, fl := range s.Flags {
		switch fl {
		case nft.FlagConstant:
			f |= unix.NFT_SET_CONSTANT
		case nft.FlagInterval:
			f |= unix.NFT_SET_INTERVAL
		case nft.FlagDynamic:
			f |= unix.NFT_SET_EVAL
		case nft.FlagTimeout:
			f |= unix.NFT_SET_TIMEOUT
		}
	}
	return f
}

// putSetAttrs writes a NEWSET message's attributes as nft 1.0.6 does. The
// userdata records the key's byte order (host order for the integer keys
// of numgen maps: google/nftables v0.3.0 records big-endian for every
// anonymous set, and nft then lists keys 0, 1 as 0, 16777216), the data's
// for maps, and the comment (which google/nftables v0.3.0 cannot read back).
func (b *Batch) putSetAttrs(info *setInfo, name string, id, flags, size uint32, timeout time.Duration, comment string) {
	e := &b.enc
	e.PutString(unix.NFTA_SET_TABLE, b.table)
	e.PutString(unix.NFTA_SET_NAME, name)
	if flags != 0 {
		e.PutU32(unix.NFTA_SET_FLAGS, flags)
	}
	e.PutU32(unix.NFTA_SET_KEY_TYPE, info.key.magic())
	e.PutU32(unix.NFTA_SET_KEY_LEN, uint32(info.key.size()))
	if info.isMap() {
		e.PutU32(unix.NFTA_SET_DATA_TYPE, info.data.magic())
		if !info.data.isVerdict() {
			e.PutU32(unix.NFTA_SET_DATA_LEN, uint32(info.data.size()))
		}
	}
	if timeout != 0 {
		e.PutU64(unix.NFTA_SET_TIMEOUT, uint64(timeout.Milliseconds()))
	}
	if size != 0 {
		d := e.Nested(unix.NFTA_SET_DESC)
		e.PutU32(unix.NFTA_SET_DESC_SIZE, size)
		e.End(d)
	}
	e.PutU32(unix.NFTA_SET_ID, id)
	ud := appendUdataU32(nil, udataSetKeyOrder, info.keyOrder)
	if info.isMap() {
		ud = appendUdataU32(ud, udataSetDataOrder, info.data.order())
	}
	if info.keyTypeof != nil {
		ud = appendUdata(ud, udataSetKeyTypeof, info.keyTypeof)
	}
	if info.dataTypeof != nil {
		ud = appendUdata(ud, udataSetDataTypeof, info.dataTypeof)
	}
	if comment != "" {
		ud = appendUdataString(ud, udataSetComment, comment)
	}
	e.Put(unix.NFTA_SET_USERDATA, ud)
}

// addAnonSet creates a rule's anonymous set and points its lookup at it.
// In a table created by this batch the set gets a name of its own; else
// the kernel picks a free "__set%d" name, which costs a scan of all the
// table's sets with sscanf per set, the kernel time that grows
// quadratically when a transaction adds thousands of anonymous maps.
func (b *Batch) addAnonSet(as *anonSet) {
	prefix := "__set"
	if as.info.isMap() {
		prefix = "__map"
	}
	name := prefix + "%d"
	if b.fresh {
		name = prefix + strconv.Itoa(b.anonCount)
		b.anonCount++
	}
	b.nextID++
	as.lookup.SetName, as.lookup.SetID = name, b.nextID
	flags := uint32(unix.NFT_SET_ANONYMOUS | unix.NFT_SET_CONSTANT)
	if as.info.interval {
		flags |= unix.NFT_SET_INTERVAL
	}
	if as.info.isMap() {
		flags |= unix.NFT_SET_MAP
	}
	as.info.keyOrder = as.info.key.order()
	start := b.begin(unix.NFT_MSG_NEWSET, unix.NLM_F_CREATE, batchOp{verb: "add", kind: "anonymous set", name: name})
	b.putSetAttrs(&as.info, name, b.nextID, flags, uint32(len(as.elems)), 0, "")
	b.finish(start)
	b.addElems(unix.NFT_MSG_NEWSETELEM, unix.NLM_F_CREATE, name, b.nextID, "add", as.elems)
}

// AddElements adds elements to a set or map that AddSet or Declare made
// known, in messages of at most maxElemsPerMsg elements.
func (b *Batch) AddElements(set string, elems []nft.Element) error {
	return b.elements(unix.NFT_MSG_NEWSETELEM, unix.NLM_F_CREATE, "add", set, elems)
}

// DeleteElements deletes elements, by key (values and comments are not
// sent), from a set or map that AddSet or Declare made known.
func (b *Batch) DeleteElements(set string, elems []nft.Element) error {
	return b.elements(unix.NFT_MSG_DELSETELEM, 0, "delete", set, elems)
}

func (b *Batch) elements(msg, flags uint16, verb, set string, elems []nft.Element) error {
	info := b.sets[set]
	if err := b.badSets[set]; err != nil {
		b.fail(fmt.Errorf("%s elements: %w", verb, err))
		return b.err
	}
	if info == nil {
		b.fail(fmt.Errorf("%s elements: set %s is not declared in this batch", verb, set))
		return b.err
	}
	raws, err := info.encodeElements(elems, msg == unix.NFT_MSG_DELSETELEM)
	if err != nil {
		b.fail(err)
		return b.err
	}
	b.addElems(msg, flags, set, 0, verb, raws)
	return nil
}

// addElems queues element messages; id is the set's NFTA_SET_ID when it
// is created in this batch.
func (b *Batch) addElems(msg, flags uint16, set string, id uint32, verb string, raws []rawElem) {
	for len(raws) > 0 {
		start := b.begin(msg, flags, batchOp{verb: verb, kind: "elements of", name: set})
		b.objects--
		b.enc.PutString(unix.NFTA_SET_ELEM_LIST_TABLE, b.table)
		b.enc.PutString(unix.NFTA_SET_ELEM_LIST_SET, set)
		if id != 0 {
			b.enc.PutU32(unix.NFTA_SET_ELEM_LIST_SET_ID, id)
		}
		n, size := 0, 0
		for n < len(raws) && n < maxElemsPerMsg && size < maxElemBytesPerMsg {
			size += len(raws[n].key) + len(raws[n].data) + len(raws[n].comment) + 64
			n++
		}
		encodeElementList(&b.enc, raws[:n])
		b.finish(start)
		b.objects += n
		b.ops[len(b.ops)-1].detail = strconv.Itoa(n) + " elements"
		raws = raws[n:]
	}
}

// addCompiledRule queues a NEWRULE for the compiled expressions.
func (b *Batch) addCompiledRule(chain, text string, cr *compiledRule) error {
	start := b.begin(unix.NFT_MSG_NEWRULE, unix.NLM_F_CREATE|unix.NLM_F_APPEND,
		batchOp{verb: "add", kind: "rule to chain", name: chain, detail: text})
	b.enc.PutString(unix.NFTA_RULE_TABLE, b.table)
	b.enc.PutString(unix.NFTA_RULE_CHAIN, chain)
	list := b.enc.Nested(unix.NFTA_RULE_EXPRESSIONS)
	for _, e := range cr.exprs {
		if err := b.putExpr(e); err != nil {
			err = fmt.Errorf("nftables: chain %s: rule %q: %w", chain, text, err)
			b.fail(err)
			return err
		}
	}
	b.enc.End(list)
	if len(cr.udata) > 0 {
		b.enc.Put(unix.NFTA_RULE_USERDATA, cr.udata)
	}
	b.finish(start)
	return nil
}

// baseChainHook reads a base chain's hook and its priority as nft spells
// it: a number, or a standard name with an optional offset ("dstnat - 10").
func baseChainHook(bc *nft.BaseChain) (uint32, int, error) {
	hook, ok := hookNumbers[bc.Hook]
	if !ok {
		return 0, 0, fmt.Errorf("unsupported hook %q", bc.Hook)
	}
	switch bc.Type {
	case nft.FilterType, nft.NATType, nft.RouteType:
	default:
		return 0, 0, fmt.Errorf("unsupported chain type %q", bc.Type)
	}
	prio, err := parsePriority(string(bc.Priority), bc.Hook)
	return hook, prio, err
}

var hookNumbers = map[nft.Hook]uint32{
	nft.PreroutingHook: unix.NF_INET_PRE_ROUTING, nft.InputHook: unix.NF_INET_LOCAL_IN,
	nft.ForwardHook: unix.NF_INET_FORWARD, nft.OutputHook: unix.NF_INET_LOCAL_OUT,
	nft.PostroutingHook: unix.NF_INET_POST_ROUTING,
}

func parsePriority(s string, hook nft.Hook) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	name, off := s, 0
	if i := strings.IndexAny(s, "+-"); i > 0 {
		n, err := strconv.Atoi(strings.ReplaceAll(s[i:], " ", ""))
		if err != nil || s[i-1] != ' ' {
			return 0, fmt.Errorf("bad priority %q", s)
		}
		name, off = s[:i-1], n
	}
	for _, p := range stdPriorities {
		if p.name == name && p.validFor(hook) {
			return p.value + off, nil
		}
	}
	return 0, fmt.Errorf("bad priority %q for hook %s", s, hook)
}
