package nftables

import (
	"encoding/binary"
	"errors"
	"time"
	"unsafe"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// The payload of a cache file is the table in a format of the tool's own:
// every string as a uvarint length and its bytes, every list as a uvarint
// count and its items, in the field order of the types below. gob took
// about 0.12 s to write a 10k-Service table after every apply and 0.09 s
// to read it before every plan, with reflection for each string; this is
// a copy. The format's name carries the shape of nft.Ruleset (see
// cacheFormat), and TestCacheCodecCoversRuleset fails when a field is
// added that the codec does not carry.

// errCacheCodec: the payload ends early or holds a length past its end.
var errCacheCodec = errors.New("cache file: malformed table")

// encodeCache encodes rs, which may be nil (no such table).
func encodeCache(rs *nft.Ruleset) []byte {
	if rs == nil {
		return []byte{0}
	}
	// Sized once: growing the buffer by doubling copied and faulted in
	// more than the encoding itself wrote (at 10k Services, 5 MB).
	e := cacheEncoder{buf: make([]byte, 0, cacheSize(rs))}
	e.buf = append(e.buf, 1)
	e.strs(string(rs.Family), rs.Table, rs.Comment)
	e.count(len(rs.Sets))
	for _, s := range rs.Sets {
		e.set(s)
	}
	e.count(len(rs.Chains))
	for _, c := range rs.Chains {
		e.chain(c)
	}
	return e.buf
}

type cacheEncoder struct{ buf []byte }

// cacheSize bounds the length of rs's encoding from above: every string
// and count with the ten bytes a uvarint may take at most.
func cacheSize(rs *nft.Ruleset) int {
	const n = binary.MaxVarintLen64
	size := 1 + 5*n + len(rs.Family) + len(rs.Table) + len(rs.Comment)
	for _, s := range rs.Sets {
		size += 1 + 9*n + len(s.Name) + len(s.Type) + len(s.DataType) + len(s.Comment)
		for _, f := range s.Flags {
			size += n + len(f)
		}
		for _, el := range s.Elements {
			size += 3*n + len(el.Key) + len(el.Value) + len(el.Comment)
		}
	}
	for _, c := range rs.Chains {
		size += 8*n + len(c.Name) + len(c.Comment)
		if c.Base != nil {
			size += len(c.Base.Type) + len(c.Base.Hook) + len(c.Base.Priority) + len(c.Base.Policy)
		}
		for _, r := range c.Rules {
			size += n + len(r)
		}
	}
	return size
}

func (e *cacheEncoder) count(n int) { e.buf = binary.AppendUvarint(e.buf, uint64(n)) }

func (e *cacheEncoder) strs(ss ...string) {
	for _, s := range ss {
		e.count(len(s))
		e.buf = append(e.buf, s...)
	}
}

func (e *cacheEncoder) set(s *nft.Set) {
	e.strs(s.Name, s.Type, s.DataType)
	e.buf = append(e.buf, boolByte(s.Typeof))
	e.buf = binary.AppendUvarint(e.buf, s.Size)
	e.count(len(s.Flags))
	for _, f := range s.Flags {
		e.strs(string(f))
	}
	e.buf = binary.AppendVarint(e.buf, int64(s.Timeout))
	e.strs(s.Comment)
	e.count(len(s.Elements))
	for _, el := range s.Elements {
		e.strs(el.Key, el.Value, el.Comment)
	}
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (e *cacheEncoder) chain(c *nft.Chain) {
	e.strs(c.Name)
	if c.Base == nil {
		e.buf = append(e.buf, 0)
	} else {
		e.buf = append(e.buf, 1)
		e.strs(string(c.Base.Type), string(c.Base.Hook), string(c.Base.Priority), string(c.Base.Policy))
	}
	e.strs(c.Comment)
	e.count(len(c.Rules))
	for _, r := range c.Rules {
		e.strs(string(r))
	}
}

// decodeCache decodes what encodeCache wrote. It takes data: the strings
// it returns are views of it, not copies, so the caller must not change
// data after. A copy of a 10k-Service table's file (5 MB) was about 40 ms
// of a one-shot plan on this machine, where memory touched for the first
// time is dear.
func decodeCache(data []byte) (rs *nft.Ruleset, err error) {
	d := cacheDecoder{text: unsafe.String(unsafe.SliceData(data), len(data))}
	defer func() {
		if recover() != nil { // a length or count past the end
			rs, err = nil, errCacheCodec
		}
	}()
	if !d.flag() {
		return nil, d.end()
	}
	rs = &nft.Ruleset{Family: nft.Family(d.str()), Table: d.str(), Comment: d.str()}
	if n := d.count(); n > 0 {
		rs.Sets = make([]*nft.Set, n)
		for i := range rs.Sets {
			rs.Sets[i] = d.set()
		}
	}
	if n := d.count(); n > 0 {
		rs.Chains = make([]*nft.Chain, n)
		for i := range rs.Chains {
			rs.Chains[i] = d.chain()
		}
	}
	return rs, d.end()
}

type cacheDecoder struct {
	text string
	pos  int
}

func (d *cacheDecoder) byte() byte {
	b := d.text[d.pos]
	d.pos++
	return b
}

// flag reads a presence byte: 0 or 1.
func (d *cacheDecoder) flag() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	panic(errCacheCodec)
}

// uvarint reads what binary.AppendUvarint wrote.
func (d *cacheDecoder) uvarint() uint64 {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		b := d.byte()
		if shift == 63 && b > 1 {
			break // past 64 bits
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
	panic(errCacheCodec)
}

// varint reads what binary.AppendVarint wrote (zig-zag).
func (d *cacheDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// count reads a length; one past what the rest of the payload could hold
// panics, before anything is allocated for it.
func (d *cacheDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.text)-d.pos) {
		panic(errCacheCodec)
	}
	return int(n)
}

func (d *cacheDecoder) str() string {
	n := d.count()
	s := d.text[d.pos : d.pos+n]
	d.pos += n
	return s
}

func (d *cacheDecoder) set() *nft.Set {
	s := &nft.Set{Name: d.str(), Type: d.str(), DataType: d.str(), Typeof: d.flag(), Size: d.uvarint()}
	if n := d.count(); n > 0 {
		s.Flags = make([]nft.SetFlag, n)
		for i := range s.Flags {
			s.Flags[i] = nft.SetFlag(d.str())
		}
	}
	s.Timeout = time.Duration(d.varint())
	s.Comment = d.str()
	if n := d.count(); n > 0 {
		s.Elements = make([]nft.Element, n)
		for i := range s.Elements {
			s.Elements[i] = nft.Element{Key: d.str(), Value: d.str(), Comment: d.str()}
		}
	}
	return s
}

func (d *cacheDecoder) chain() *nft.Chain {
	c := &nft.Chain{Name: d.str()}
	if d.flag() {
		c.Base = &nft.BaseChain{Type: nft.ChainType(d.str()), Hook: nft.Hook(d.str()), Priority: nft.Priority(d.str()), Policy: nft.Policy(d.str())}
	}
	c.Comment = d.str()
	if n := d.count(); n > 0 {
		c.Rules = make([]nft.Rule, n)
		for i := range c.Rules {
			c.Rules[i] = nft.Rule(d.str())
		}
	}
	return c
}

// end fails unless the whole payload was read.
func (d *cacheDecoder) end() error {
	if d.pos != len(d.text) {
		return errCacheCodec
	}
	return nil
}
