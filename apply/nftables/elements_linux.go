package nftables

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// setInfo is what encoding and decoding elements needs to know of a set.
type setInfo struct {
	name      string
	key, data setType // data is nil for a set
	interval  bool
	keyOrder  uint32 // byte order recorded in the set's userdata (0: none)
	// keyTypeof and dataTypeof are the userdata of a set declared by
	// expression (codec_typeof_linux.go); nil for a type by name.
	keyTypeof, dataTypeof []byte
}

func (s *setInfo) isMap() bool { return s.data != nil }

// rawElem is one element as the kernel holds it.
type rawElem struct {
	key     []byte
	data    []byte        // a map's value
	verdict *expr.Verdict // a verdict map's value
	end     bool          // NFT_SET_ELEM_INTERVAL_END
	timeout time.Duration
	expires time.Duration
	comment string
}

// encodeElements turns elements as nft prints them into kernel elements.
// An element of an interval set may be an address, a prefix or a range,
// and becomes a start and an end element.
// With keysOnly (for a delete) values are neither required nor sent.
func (s *setInfo) encodeElements(elems []nft.Element, keysOnly bool) ([]rawElem, error) {
	if s.interval {
		return s.encodeIntervals(elems)
	}
	enc := s
	if keysOnly && s.data != nil {
		plain := *s
		plain.data = nil
		enc = &plain
	}
	out := make([]rawElem, 0, len(elems))
	for _, e := range elems {
		if keysOnly {
			e.Value, e.Comment = "", ""
		}
		r, err := enc.encodeElement(e)
		if err != nil {
			return nil, fmt.Errorf("set %s element %q: %w", s.name, e.Key, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *setInfo) encodeElement(e nft.Element) (rawElem, error) {
	var r rawElem
	key, timeout, expires, err := splitElementKey(e.Key)
	if err != nil {
		return r, err
	}
	if r.key, err = s.key.encodeValue(key); err != nil {
		return r, err
	}
	r.timeout, r.expires, r.comment = timeout, expires, e.Comment
	switch {
	case s.isMap() && e.Value == "":
		return r, fmt.Errorf("map element without a value")
	case !s.isMap() && e.Value != "":
		return r, fmt.Errorf("set element with a value")
	case s.data.isVerdict():
		r.verdict, err = parseVerdict(e.Value)
	case s.isMap():
		r.data, err = s.data.encodeValue(e.Value)
	}
	return r, err
}

// splitElementKey separates "10.0.0.1 timeout 3h expires 2h59m" into the
// key and the element's own timeout and remaining lifetime.
func splitElementKey(s string) (key string, timeout, expires time.Duration, err error) {
	key = s
	if i := strings.Index(s, " expires "); i >= 0 {
		key = s[:i]
		if expires, err = nft.ParseDuration(s[i+len(" expires "):]); err != nil {
			return "", 0, 0, fmt.Errorf("bad expires in %q", s)
		}
	}
	if i := strings.Index(key, " timeout "); i >= 0 {
		t := key[i+len(" timeout "):]
		key = key[:i]
		if timeout, err = nft.ParseDuration(t); err != nil {
			return "", 0, 0, fmt.Errorf("bad timeout in %q", s)
		}
	}
	return key, timeout, expires, nil
}

func (s *setInfo) encodeIntervals(elems []nft.Element) ([]rawElem, error) {
	if len(s.key) != 1 || s.data != nil {
		return nil, fmt.Errorf("set %s: only address interval sets are supported", s.name)
	}
	items := make([]string, len(elems))
	for i, e := range elems {
		if e.Comment != "" || e.Value != "" {
			return nil, fmt.Errorf("set %s element %q: interval elements carry no comment or value", s.name, e.Key)
		}
		items[i] = e.Key
	}
	spans, err := parseSpans(items, s.key[0])
	if err != nil {
		return nil, fmt.Errorf("set %s: %w", s.name, err)
	}
	return intervalElements(spans), nil
}

// decodeElements prints kernel elements as nft lists them. Interval end
// elements are folded into ranges.
func (s *setInfo) decodeElements(raws []rawElem) []nft.Element {
	if s.interval && len(s.key) == 1 && s.data == nil {
		spans := intervalSpans(raws)
		out := make([]nft.Element, len(spans))
		for i, sp := range spans {
			out[i] = nft.Element{Key: formatSpan(sp)}
		}
		return out
	}
	out := make([]nft.Element, 0, len(raws))
	for _, r := range raws {
		out = append(out, s.decodeElement(r))
	}
	return out
}

func (s *setInfo) decodeElement(r rawElem) nft.Element {
	e := nft.Element{Comment: r.comment}
	key, ok := s.keyType().formatValue(r.key)
	if !ok {
		key = fmt.Sprintf("0x%x", r.key)
	}
	if r.timeout != 0 {
		key += " timeout " + nft.FormatDuration(r.timeout)
	}
	if r.expires != 0 {
		key += " expires " + nft.FormatDuration(r.expires)
	}
	e.Key = key
	switch {
	case r.verdict != nil:
		e.Value = formatVerdict(r.verdict)
	case s.isMap():
		if v, ok := s.data.formatValue(r.data); ok {
			e.Value = v
		} else {
			e.Value = fmt.Sprintf("0x%x", r.data)
		}
	}
	return e
}

// keyType is the key type with the byte order nft would print it in: an
// integer key recorded as big-endian (as google/nftables v0.3.0 records
// every anonymous set) is read big-endian, as nft does.
func (s *setInfo) keyType() setType {
	if len(s.key) == 1 && s.key[0] == typeInteger && s.keyOrder == byteOrderBig {
		return setType{typeIntegerBig}
	}
	return s.key
}

var typeIntegerBig = &dataType{name: "integer", magic: 4, len: 4, order: byteOrderBig,
	format: func(b []byte) (string, bool) { return strconv.FormatUint(uint64(nfnl.BE32(b)), 10), true }}

// Verdicts as nft spells them.
var verdictNames = map[expr.VerdictKind]string{
	expr.VerdictAccept: "accept", expr.VerdictDrop: "drop", expr.VerdictReturn: "return",
	expr.VerdictContinue: "continue", expr.VerdictJump: "jump", expr.VerdictGoto: "goto",
}

// parseVerdict reads "drop", "goto CHAIN", "jump CHAIN" and so on.
func parseVerdict(s string) (*expr.Verdict, error) {
	word, chain, _ := strings.Cut(s, " ")
	for kind, name := range verdictNames {
		if name != word {
			continue
		}
		takesChain := kind == expr.VerdictJump || kind == expr.VerdictGoto
		if takesChain != (chain != "") || strings.ContainsAny(chain, " \"") {
			break
		}
		return &expr.Verdict{Kind: kind, Chain: chain}, nil
	}
	return nil, fmt.Errorf("unsupported verdict %q", s)
}

func formatVerdict(v *expr.Verdict) string {
	name, ok := verdictNames[v.Kind]
	if !ok {
		return fmt.Sprintf("# unsupported verdict %d", v.Kind)
	}
	if v.Chain != "" {
		return name + " " + v.Chain
	}
	return name
}

// encodeElementList writes elems as the NFTA_SET_ELEM_LIST_ELEMENTS of a
// NEWSETELEM or DELSETELEM message.
func encodeElementList(e *nfnl.Encoder, elems []rawElem) {
	list := e.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS)
	for _, r := range elems {
		item := e.Nested(unix.NFTA_LIST_ELEM)
		if r.end {
			e.PutU32(unix.NFTA_SET_ELEM_FLAGS, unix.NFT_SET_ELEM_INTERVAL_END)
		}
		k := e.Nested(unix.NFTA_SET_ELEM_KEY)
		e.Put(unix.NFTA_DATA_VALUE, r.key)
		e.End(k)
		switch {
		case r.verdict != nil:
			d := e.Nested(unix.NFTA_SET_ELEM_DATA)
			v := e.Nested(unix.NFTA_DATA_VERDICT)
			e.PutU32(unix.NFTA_VERDICT_CODE, uint32(int32(r.verdict.Kind)))
			if r.verdict.Chain != "" {
				e.PutString(unix.NFTA_VERDICT_CHAIN, r.verdict.Chain)
			}
			e.End(v)
			e.End(d)
		case r.data != nil:
			d := e.Nested(unix.NFTA_SET_ELEM_DATA)
			e.Put(unix.NFTA_DATA_VALUE, r.data)
			e.End(d)
		}
		if r.timeout != 0 {
			e.PutU64(unix.NFTA_SET_ELEM_TIMEOUT, uint64(r.timeout.Milliseconds()))
		}
		if r.expires != 0 {
			e.PutU64(unix.NFTA_SET_ELEM_EXPIRATION, uint64(r.expires.Milliseconds()))
		}
		if r.comment != "" {
			e.Put(unix.NFTA_SET_ELEM_USERDATA, appendUdataString(nil, udataComment, r.comment))
		}
		e.End(item)
	}
	e.End(list)
}

// decodeRawElem reads one NFTA_LIST_ELEM of a GETSETELEM answer.
func decodeRawElem(b []byte) (rawElem, error) {
	var r rawElem
	err := nfnl.Walk(b, func(typ uint16, v []byte) error {
		switch typ {
		case unix.NFTA_SET_ELEM_KEY:
			key, err := nfnl.DataValue(v)
			r.key = append([]byte(nil), key...)
			return err
		case unix.NFTA_SET_ELEM_DATA:
			return r.decodeData(v)
		case unix.NFTA_SET_ELEM_FLAGS:
			r.end = nfnl.BE32(v)&unix.NFT_SET_ELEM_INTERVAL_END != 0
		case unix.NFTA_SET_ELEM_TIMEOUT:
			r.timeout = time.Duration(nfnl.BE64(v)) * time.Millisecond
		case unix.NFTA_SET_ELEM_EXPIRATION:
			r.expires = time.Duration(nfnl.BE64(v)) * time.Millisecond
		case unix.NFTA_SET_ELEM_USERDATA:
			r.comment = udataString(v, udataComment)
		}
		return nil
	})
	return r, err
}

// decodeData reads an element's NFTA_SET_ELEM_DATA: a map's value or
// verdict.
func (r *rawElem) decodeData(b []byte) error {
	return nfnl.Walk(b, func(typ uint16, v []byte) error {
		switch typ {
		case unix.NFTA_DATA_VALUE:
			r.data = append([]byte(nil), v...)
		case unix.NFTA_DATA_VERDICT:
			verdict, err := nfnl.ParseVerdict(v)
			if err != nil {
				return err
			}
			r.verdict = &expr.Verdict{Kind: expr.VerdictKind(verdict.Code), Chain: verdict.Chain}
		}
		return nil
	})
}
