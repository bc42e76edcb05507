package kernel

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nfnl"
)

var traceTypes = map[uint32]string{
	unix.NFT_TRACETYPE_POLICY: "policy",
	unix.NFT_TRACETYPE_RETURN: "return",
	unix.NFT_TRACETYPE_RULE:   "rule",
}

// familyNames are nft's names of the nf_tables families.
var familyNames = map[byte]string{
	unix.NFPROTO_INET: "inet", unix.NFPROTO_IPV4: "ip", unix.NFPROTO_ARP: "arp",
	unix.NFPROTO_NETDEV: "netdev", unix.NFPROTO_BRIDGE: "bridge", unix.NFPROTO_IPV6: "ip6",
}

// decodeMessages decodes the trace events in one netlink datagram.
func decodeMessages(b []byte) ([]Event, error) {
	var out []Event
	err := nfnl.Messages(b, func(m nfnl.Message) error {
		if m.Type != nfnl.NFTablesType(unix.NFT_MSG_TRACE) {
			return nil
		}
		ev, err := DecodeEvent(m.Data)
		out = append(out, ev)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeEvent decodes a trace event's netlink payload: the nfgenmsg
// header and the attributes after it.
func DecodeEvent(payload []byte) (Event, error) {
	family, attrs, err := nfnl.Body(payload)
	if err != nil {
		return Event{}, fmt.Errorf("trace event: %w", err)
	}
	ev := Event{Family: familyNames[family]}
	err = nfnl.Walk(attrs, func(typ uint16, v []byte) error {
		switch typ {
		case unix.NFTA_TRACE_TABLE:
			ev.Table = nfnl.CString(v)
		case unix.NFTA_TRACE_CHAIN:
			ev.Chain = nfnl.CString(v)
		case unix.NFTA_TRACE_RULE_HANDLE:
			ev.Handle = nfnl.BE64(v)
		case unix.NFTA_TRACE_TYPE:
			ev.Type = traceTypes[nfnl.BE32(v)]
		case unix.NFTA_TRACE_ID:
			ev.ID = nfnl.BE32(v)
		case unix.NFTA_TRACE_NETWORK_HEADER:
			ev.Network = append([]byte(nil), v...)
		case unix.NFTA_TRACE_TRANSPORT_HEADER:
			ev.Transport = append([]byte(nil), v...)
		case unix.NFTA_TRACE_VERDICT:
			verdict, err := nfnl.ParseVerdict(v)
			if err != nil {
				return fmt.Errorf("trace event verdict: %w", err)
			}
			ev.Verdict = verdictText(verdict)
		case unix.NFTA_TRACE_POLICY:
			ev.Verdict = verdictName(int32(nfnl.BE32(v)))
		}
		return nil
	})
	return ev, err
}

// verdictText is a verdict as nft spells it: its name, and the chain of a
// jump or goto.
func verdictText(v nfnl.Verdict) string {
	if v.Chain != "" {
		return verdictName(v.Code) + " " + v.Chain
	}
	return verdictName(v.Code)
}

func verdictName(code int32) string {
	switch code {
	case unix.NFT_CONTINUE:
		return "continue"
	case unix.NFT_BREAK:
		return "break"
	case unix.NFT_JUMP:
		return "jump"
	case unix.NFT_GOTO:
		return "goto"
	case unix.NFT_RETURN:
		return "return"
	}
	switch code & nfnl.NF_VERDICT_MASK {
	case nfnl.NF_DROP:
		return "drop"
	case nfnl.NF_ACCEPT:
		return "accept"
	case nfnl.NF_STOLEN:
		return "stolen"
	case nfnl.NF_QUEUE:
		return "queue"
	}
	return fmt.Sprintf("verdict-%d", code)
}
