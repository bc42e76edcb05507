package kernel

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Event is one nf_tables trace event: a rule that matched (Type "rule"),
// the end of a chain the packet went on from (Type "rule" without a
// Handle; "return" in older kernels), or a base chain's policy ("policy",
// with the policy as its Verdict).
type Event struct {
	// ID tells one traced packet's events from another's.
	ID     uint32
	Family string // ip, ip6, inet, ...
	Table  string
	Chain  string
	// Handle is the rule's handle; 0 for a policy or return event.
	Handle uint64
	Type   string
	// Verdict is the rule's verdict: accept, drop, continue, return, or
	// "jump CHAIN" / "goto CHAIN"; empty when the event has none.
	Verdict string
	// Network and Transport are the packet's headers as the chain saw
	// them, carried by the first event of each base chain the packet
	// passes.
	Network, Transport []byte
}

// Trace event attributes and types (linux/netfilter/nf_tables.h).
const (
	attrTable     = 1
	attrChain     = 2
	attrHandle    = 3
	attrType      = 4
	attrVerdict   = 5
	attrID        = 6
	attrNetwork   = 8
	attrTransport = 9
	attrPolicy    = 16

	verdictCode  = 1
	verdictChain = 2
)

var traceTypes = map[uint32]string{1: "policy", 2: "return", 3: "rule"}

// familyNames are the nfgenmsg families of nf_tables.
var familyNames = map[byte]string{1: "inet", 2: "ip", 3: "arp", 5: "netdev", 7: "bridge", 10: "ip6"}

// DecodeEvent decodes a trace event's netlink payload: the nfgenmsg
// header and the attributes after it.
func DecodeEvent(payload []byte) (Event, error) {
	if len(payload) < 4 {
		return Event{}, fmt.Errorf("trace event of %d bytes", len(payload))
	}
	ev := Event{Family: familyNames[payload[0]]}
	err := walkAttrs(payload[4:], func(typ uint16, v []byte) error {
		switch typ {
		case attrTable:
			ev.Table = cString(v)
		case attrChain:
			ev.Chain = cString(v)
		case attrHandle:
			ev.Handle = be64(v)
		case attrType:
			ev.Type = traceTypes[be32(v)]
		case attrID:
			ev.ID = be32(v)
		case attrNetwork:
			ev.Network = append([]byte(nil), v...)
		case attrTransport:
			ev.Transport = append([]byte(nil), v...)
		case attrVerdict:
			ev.Verdict = decodeVerdict(v)
		case attrPolicy:
			ev.Verdict = verdictName(int32(be32(v)))
		}
		return nil
	})
	return ev, err
}

// decodeVerdict reads a nested verdict: its code, and the chain of a jump
// or goto.
func decodeVerdict(v []byte) string {
	var code int32
	var chain string
	_ = walkAttrs(v, func(t uint16, w []byte) error {
		switch t {
		case verdictCode:
			code = int32(be32(w))
		case verdictChain:
			chain = cString(w)
		}
		return nil
	})
	if chain != "" {
		return verdictName(code) + " " + chain
	}
	return verdictName(code)
}

func verdictName(code int32) string {
	switch code {
	case -1:
		return "continue"
	case -2:
		return "break"
	case -3:
		return "jump"
	case -4:
		return "goto"
	case -5:
		return "return"
	}
	switch code & 0xff {
	case 0:
		return "drop"
	case 1:
		return "accept"
	case 2:
		return "stolen"
	case 3:
		return "queue"
	}
	return fmt.Sprintf("verdict-%d", code)
}

// walkAttrs calls fn for each netlink attribute in b, the nested flag
// taken off its type.
func walkAttrs(b []byte, fn func(typ uint16, v []byte) error) error {
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		if n < 4 || n > len(b) {
			return fmt.Errorf("netlink attribute of length %d in %d bytes", n, len(b))
		}
		if err := fn(binary.NativeEndian.Uint16(b[2:])&0x3fff, b[4:n]); err != nil {
			return err
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return nil
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

func be32(b []byte) uint32 {
	if len(b) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func be64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
