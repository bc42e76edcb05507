package nftables

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// readSets reads the set declarations. The decoding is this package's own:
// google/nftables v0.3.0 reads a verdict map's data type into KeyType and
// leaves DataType empty (its issue #319), and loses set comments.
func (r *tableReader) readSets() error {
	return r.dump(unix.NFT_MSG_GETSET, unix.NFTA_SET_TABLE, nil, func(a nfnl.Attrs) error {
		name := nfnl.CString(a[unix.NFTA_SET_NAME])
		flags := nfnl.BE32(a[unix.NFTA_SET_FLAGS])
		info := setInfo{name: name, interval: flags&unix.NFT_SET_INTERVAL != 0}
		if ud, ok := a[unix.NFTA_SET_USERDATA]; ok {
			if v, ok := udataGet(ud, udataSetKeyOrder); ok && len(v) == 4 {
				info.keyOrder = nativeU32(v)
			}
		}
		keyType, keyOK := decodeSetType(nfnl.BE32(a[unix.NFTA_SET_KEY_TYPE]))
		keyOK = keyOK && keyType.size() == int(nfnl.BE32(a[unix.NFTA_SET_KEY_LEN]))
		info.key = keyType
		var dataType setType
		dataOK := true
		if flags&unix.NFT_SET_MAP != 0 {
			dataType, dataOK = decodeSetType(nfnl.BE32(a[unix.NFTA_SET_DATA_TYPE]))
			dataOK = dataOK && (dataType.isVerdict() || dataType.size() == int(nfnl.BE32(a[unix.NFTA_SET_DATA_LEN])))
			info.data = dataType
		}
		if flags&unix.NFT_SET_ANONYMOUS != 0 {
			if keyOK && dataOK {
				r.anon[name] = &anonData{info: info}
			}
			return nil
		}
		s := &nft.Set{Name: name, Flags: setFlagNames(flags)}
		s.Type = typeText(keyType, keyOK, a[unix.NFTA_SET_KEY_TYPE])
		if flags&unix.NFT_SET_MAP != 0 {
			s.DataType = typeText(dataType, dataOK, a[unix.NFTA_SET_DATA_TYPE])
		}
		if t, ok := a[unix.NFTA_SET_TIMEOUT]; ok {
			s.Timeout = time.Duration(nfnl.BE64(t)) * time.Millisecond
		}
		s.Size = descSize(a[unix.NFTA_SET_DESC])
		if ud, ok := a[unix.NFTA_SET_USERDATA]; ok {
			s.Comment = udataString(ud, udataSetComment)
			readTypeof(s, ud, keyType, dataType)
		}
		r.rs.Sets = append(r.rs.Sets, s)
		if keyOK && dataOK {
			r.named[name] = &info
		}
		return nil
	})
}

// typeText names a set type; one the codec does not know reads as a text
// no render uses, so that it shows up as drift.
func typeText(t setType, ok bool, raw []byte) string {
	if !ok {
		return fmt.Sprintf("unsupported type 0x%08x", nfnl.BE32(raw))
	}
	return t.String()
}

// readTypeof names a set's key and data by the expressions its userdata
// holds, as nft lists a set declared with typeof. One this codec does not
// write, or one that does not load the type the kernel holds, reads as a
// text no render uses, so that it shows up as drift.
func readTypeof(s *nft.Set, ud []byte, key, data setType) {
	keyUD, ok := udataGet(ud, udataSetKeyTypeof)
	if !ok || typeofIsValue(keyUD) {
		return
	}
	s.Typeof = true
	s.Type = typeofText(keyUD, key)
	if s.DataType == "" {
		return
	}
	if dataUD, ok := udataGet(ud, udataSetDataTypeof); ok {
		s.DataType = typeofText(dataUD, data)
	} // else a verdict, listed by its type's name
}

// typeofText decodes a typeof userdata value that loads the kernel's type.
func typeofText(ud []byte, kernel setType) string {
	text, ok := decodeTypeof(ud)
	if ok {
		st, _, err := encodeTypeof(text)
		ok = err == nil && setTypeEqual(st, kernel)
	}
	if !ok {
		return "unsupported expression"
	}
	return text
}

// setFlagNames lists a set's flags in the order nft 1.0.6 prints them.
func setFlagNames(flags uint32) []nft.SetFlag {
	var out []nft.SetFlag
	for _, f := range []struct {
		bit  uint32
		name nft.SetFlag
	}{
		{unix.NFT_SET_CONSTANT, nft.FlagConstant}, {unix.NFT_SET_EVAL, nft.FlagDynamic},
		{unix.NFT_SET_INTERVAL, nft.FlagInterval}, {unix.NFT_SET_TIMEOUT, nft.FlagTimeout},
	} {
		if flags&f.bit != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

func descSize(desc []byte) uint64 {
	var size uint64
	_ = nfnl.Walk(desc, func(typ uint16, v []byte) error {
		if typ == unix.NFTA_SET_DESC_SIZE {
			size = uint64(nfnl.BE32(v))
		}
		return nil
	})
	return size
}

// readElements reads the elements of every named set the codec can decode.
// Anonymous sets are read with the rules that use them.
func (r *tableReader) readElements() error {
	for _, s := range r.rs.Sets {
		info := r.named[s.Name]
		if info == nil {
			continue
		}
		raws, err := r.wholeElements(s.Name)
		if err != nil {
			return err
		}
		s.Elements = info.decodeElements(raws)
	}
	return nil
}

// tornDumpRetries is how many times a set's dump is taken again while it
// comes back torn.
const tornDumpRetries = 20

// wholeElements dumps a set's elements until a dump comes back whole.
//
// The kernel keeps a hash set in an rhashtable and resizes it in the
// background shortly after many inserts. A dump longer than one netlink
// message resumes by counting elements already sent, so a resize between
// two messages (or during one walk) reorders the table under the dump: it
// repeats some elements and, as it sends as many elements as the set
// holds, leaves out as many others. A repeated element is thus the mark of
// a torn dump, and the dump is taken again; the resize ends within
// milliseconds.
func (r *tableReader) wholeElements(set string) ([]rawElem, error) {
	for attempt := 0; ; attempt++ {
		raws, err := r.elements(set)
		if err != nil || !hasRepeats(raws) {
			return raws, err
		}
		if attempt == tornDumpRetries {
			return nil, fmt.Errorf("elements of set %s: every one of %d dumps repeated elements (the kernel's hash table kept resizing)", set, attempt+1)
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

// hasRepeats reports whether two elements have the same key (and, in an
// interval set, the same side of their interval).
func hasRepeats(raws []rawElem) bool {
	type ident struct {
		key string
		end bool
	}
	seen := make(map[ident]struct{}, len(raws))
	for _, e := range raws {
		id := ident{string(e.key), e.end}
		if _, dup := seen[id]; dup {
			return true
		}
		seen[id] = struct{}{}
	}
	return false
}

// elements dumps a set's elements.
func (r *tableReader) elements(set string) ([]rawElem, error) {
	var out []rawElem
	err := r.dump(unix.NFT_MSG_GETSETELEM, unix.NFTA_SET_ELEM_LIST_TABLE, func(e *nfnl.Encoder) {
		e.PutString(unix.NFTA_SET_ELEM_LIST_SET, set)
	}, r.collectElems(set, &out))
	if err != nil {
		return nil, fmt.Errorf("elements of set %s: %w", set, err)
	}
	return out, nil
}

// elementsByKey gets the elements of a set with the given keys in one
// request. The kernel finds a set by walking the table's list of sets, once
// for such a get but three times for a dump, which makes reading the
// thousands of anonymous maps of a large table three times cheaper.
func (r *tableReader) elementsByKey(set string, keys [][]byte) ([]rawElem, error) {
	var out []rawElem
	err := r.c.request(unix.NFT_MSG_GETSETELEM, r.fam, false, func(e *nfnl.Encoder) {
		e.PutString(unix.NFTA_SET_ELEM_LIST_TABLE, r.table)
		e.PutString(unix.NFTA_SET_ELEM_LIST_SET, set)
		raws := make([]rawElem, len(keys))
		for i, k := range keys {
			raws[i] = rawElem{key: k}
		}
		encodeElementList(e, raws)
	}, func(m nfnl.Message) error {
		a, err := m.Attrs()
		if err != nil {
			return err
		}
		return r.collectList(a[unix.NFTA_SET_ELEM_LIST_ELEMENTS], &out)
	})
	return out, err
}

func (r *tableReader) collectElems(set string, out *[]rawElem) func(a nfnl.Attrs) error {
	return func(a nfnl.Attrs) error {
		if nfnl.CString(a[unix.NFTA_SET_ELEM_LIST_SET]) != set {
			return nil
		}
		return r.collectList(a[unix.NFTA_SET_ELEM_LIST_ELEMENTS], out)
	}
}

func (r *tableReader) collectList(list []byte, out *[]rawElem) error {
	return nfnl.Walk(list, func(typ uint16, v []byte) error {
		if typ != unix.NFTA_LIST_ELEM {
			return nil
		}
		e, err := decodeRawElem(v)
		*out = append(*out, e)
		return err
	})
}

// rawRule is a rule as dumped, before its anonymous sets are read.
type rawRule struct {
	chain *nft.Chain
	exprs []expr.Any
	udata []byte
}

// readRules reads every rule of the table in one dump, then the anonymous
// sets the rules use, and prints the rules.
func (r *tableReader) readRules() error {
	var rules []rawRule
	err := r.dump(unix.NFT_MSG_GETRULE, unix.NFTA_RULE_TABLE, nil, func(a nfnl.Attrs) error {
		ch := r.chains[nfnl.CString(a[unix.NFTA_RULE_CHAIN])]
		if ch == nil {
			return nil
		}
		exprs, err := unmarshalExprs(r.fam, a[unix.NFTA_RULE_EXPRESSIONS])
		if err != nil {
			return fmt.Errorf("rule in chain %s: %w", ch.Name, err)
		}
		rules = append(rules, rawRule{chain: ch, exprs: exprs, udata: bytes.Clone(a[unix.NFTA_RULE_USERDATA])})
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.readAnonSets(rules); err != nil {
		return err
	}
	anon := func(name string) (*setInfo, []rawElem, bool) {
		a, ok := r.anon[name]
		if !ok {
			return nil, nil, false
		}
		return &a.info, a.elems, true
	}
	for _, rr := range rules {
		rr.chain.Rules = append(rr.chain.Rules, decompileRule(r.fam, rr.exprs, rr.udata, anon))
	}
	return nil
}

// readAnonSets reads the elements of the anonymous sets rules look up. A
// map that a "numgen random mod N" indexes holds the keys 0..N-1 (offset
// by numgen's offset), so it is read with a get of those keys; should one
// be missing, or any other set, it is dumped.
func (r *tableReader) readAnonSets(rules []rawRule) error {
	for _, rr := range rules {
		for i, e := range rr.exprs {
			l, ok := e.(*expr.Lookup)
			if !ok {
				continue
			}
			a := r.anon[l.SetName]
			if a == nil || a.elems != nil {
				continue
			}
			var err error
			if ng, ok := prevNumgen(rr.exprs, i); ok && a.info.keyType()[0] == typeInteger && len(a.info.key) == 1 {
				a.elems, err = r.elementsByKey(l.SetName, numgenKeys(ng))
			}
			if a.elems == nil || err != nil {
				a.elems, err = r.wholeElements(l.SetName)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func prevNumgen(exprs []expr.Any, i int) (*expr.Numgen, bool) {
	if i == 0 {
		return nil, false
	}
	ng, ok := exprs[i-1].(*expr.Numgen)
	return ng, ok && ng.Modulus > 0 && ng.Modulus <= 1<<16
}

// numgenKeys are the values numgen produces, as host-endian keys.
func numgenKeys(ng *expr.Numgen) [][]byte {
	keys := make([][]byte, ng.Modulus)
	for i := range keys {
		keys[i] = binary.NativeEndian.AppendUint32(nil, ng.Offset+uint32(i))
	}
	return keys
}
